"""The kernel's account operations as `Route`s: the balance, buying credits, signing in, and
the operator's routes (register an agent, grant credits, issue an access token, fund the
local test network, the pending-money report); what they do is core/credits/accounts.py's."""

from __future__ import annotations

from typing import Any

from tollway._core import wire
from tollway._core.credits.accounts import signing_in
from tollway._core.jobs.read_routes import READ_HINTS, mcp_input
from tollway._core.plugin_api.route_shapes import McpTool, agent_needed
from tollway._core.plugin_api.routes import Route, RouteCall

OPERATOR_REFUSALS = (400, 401)


async def balance(call: RouteCall) -> wire.Balance:
    return await call.kernel.accounts.balance(call.caller)


async def top_up(call: RouteCall) -> Any:
    return await call.kernel.accounts.top_up(call.request)


async def sign_in(call: RouteCall) -> wire.AccessToken:
    return await call.kernel.accounts.sign_in(call.request, call.caller)


async def register_agent(call: RouteCall) -> wire.RegisteredAgent:
    return await call.kernel.accounts.register_agent(call.body)


async def grant_credits(call: RouteCall) -> wire.CreditsGranted:
    return await call.kernel.accounts.grant_credits(call.request.body)


async def access_token(call: RouteCall) -> wire.AccessToken:
    return await call.kernel.accounts.issue_access_token(call.body)


async def chain_fund(call: RouteCall) -> wire.ChainFunded:
    return await call.kernel.accounts.fund_chain_request(call.request.body)


async def pending(call: RouteCall) -> wire.PendingReport:
    return await call.kernel.accounts.pending_report()


def operator_route(**declared: Any) -> Route:
    """An operator route: the operator token, not rate limited, no description in OpenAPI."""
    return Route(
        **{
            "auth": "operator",
            "rate_limit": None,
            "tags": ("operator",),
            "statuses": OPERATOR_REFUSALS,
            "describe_in_openapi": False,
            **declared,
        }
    )


ROUTES = (
    Route(
        method="GET",
        path="/v1/balance",
        name="balance",
        title="Balance",
        description="Your prepaid credits and on-chain USDC balance. Free.",
        describe_in_openapi=False,
        handle=balance,
        answer_type=wire.Balance,
        answer_description="Credits and on-chain USDC of the caller.",
        tags=("credits",),
        caller_check=agent_needed("Send X-Agent-ID (wallet address or agent UUID)."),
        mcp=McpTool(input=mcp_input({}), hints=READ_HINTS),
    ),
    Route(
        method="POST",
        path="/v1/credits/top-up",
        name="credits_top_up",
        title="Buy credits",
        summary="TopUp",
        description="Buy prepaid credits with an x402 payment.",
        describe_in_openapi=False,
        handle=top_up,
        auth="optional",
        body_type=wire.TopUpRequest,
        raw_body=True,
        answer_type=wire.TopUpRecord,
        rate_limit="paid",
        tags=("credits",),
        answer_description="Credited (or already credited: `already_credited: true`).",
        also_answers=((202, "Paid, still settling: `status: pending`; retry with the same payment to read it again."),),
        paid_with="payment-signature",
        statuses=(400, 401, 402, 404, 409, 422, 429, 500, 503),
    ),
    Route(
        method="POST",
        path="/v1/auth/sign-in",
        name="auth_sign_in",
        title="Sign in",
        summary="SignIn",
        description="An access token for the wallet that signs in with its write proof.",
        describe_in_openapi=False,
        handle=sign_in,
        auth="proof",
        caller_check=signing_in,
        answer_type=wire.AccessToken,
        tags=("auth",),
        answer_description="An access token of origin `sign_in`: unlike an operator-issued one, it may change the agent's watches.",
        statuses=(400, 401, 403, 429),
    ),
    operator_route(
        method="POST",
        path="/v1/tools/internal/agents/register",
        name="operator_register_agent",
        title="Register an agent",
        summary="RegisterAgent",
        description="Registers an agent.",
        handle=register_agent,
        body_type=wire.RegisterAgentRequest,
        answer_type=wire.RegisteredAgent,
        answer_description="The agent.",
    ),
    operator_route(
        method="POST",
        path="/v1/tools/internal/credits/grant",
        name="operator_grant_credits",
        title="Grant credits",
        summary="Grant",
        description="Grants credits to an agent.",
        handle=grant_credits,
        body_type=wire.GrantCreditsRequest,
        raw_body=True,
        answer_type=wire.CreditsGranted,
        answer_description="Credits granted.",
        statuses=(400, 401, 404),
    ),
    operator_route(
        method="POST",
        path="/v1/tools/internal/access-tokens",
        name="operator_access_token",
        title="Issue an access token",
        summary="AccessToken",
        description="Issues an access token for an agent.",
        handle=access_token,
        body_type=wire.AccessTokenRequest,
        answer_type=wire.AccessToken,
        answer_description="A new access token for the agent.",
        statuses=(400, 401, 404),
    ),
    operator_route(
        method="POST",
        path="/v1/tools/internal/chain/fund",
        name="operator_chain_fund",
        title="Fund a wallet",
        summary="ChainFund",
        description="Mints test USDC to a wallet.",
        handle=chain_fund,
        body_type=wire.ChainFundRequest,
        raw_body=True,
        answer_type=wire.ChainFunded,
        answer_description="Test USDC minted (local network only).",
        statuses=(400, 401, 403),
    ),
    operator_route(
        method="GET",
        path="/v1/tools/internal/pending",
        name="operator_pending",
        title="Pending money",
        summary="Pending",
        description="Money in an intermediate state.",
        handle=pending,
        answer_type=wire.PendingReport,
        answer_description="Money in an intermediate state, and why.",
        statuses=(401,),
    ),
)
