"""The OpenAPI side of the kernel's own routes (balance, top-up, receipts,
analytics, jobs, notifications, sign-in, operator; the watch routes' are in watch_routes.py): for each operation id, its request
body, parameters, answers and security, all made of the wire types."""
from __future__ import annotations

from typing import Any

from litestar.openapi.spec import Operation

from core import wire
from core.tool import CATEGORIES

from .openapi import (
    AGENT_SECURITY,
    OPERATOR_SECURITY,
    PAYMENT_RESPONSE_HEADER,
    RATE_HEADERS,
    WireSchemas,
    json_body,
    operation_class,
    path_param,
    payment_parameter,
    query,
    quote_parameter,
)

READ_REFUSALS = (400, 401, 404, 429)
OPERATOR_REFUSALS = (400, 401)
_PERIOD = {"type": "integer", "minimum": 1, "maximum": 365}


def kernel_operations(schemas: WireSchemas) -> dict[str, type[Operation]]:
    """Operation classes by operation id."""

    def ok(type_: Any, description: str, *, limited: bool = True, status: str = "200") -> dict[str, Any]:
        answer: dict[str, Any] = {"description": description, "content": schemas.json(type_)}
        if limited:
            answer["headers"] = dict(RATE_HEADERS)
        return {status: answer}

    def read(name: str, type_: Any, description: str, parameters: list[dict[str, Any]] | None = None, refusals: tuple[int, ...] = READ_REFUSALS) -> type[Operation]:
        return operation_class(
            name,
            responses={**ok(type_, description), **schemas.refusals(refusals, rate_limited=True)},
            parameters=parameters,
            security=AGENT_SECURITY,
        )

    def operator(
        name: str, type_: Any, description: str, body: Any = None, refusals: tuple[int, ...] = OPERATOR_REFUSALS,
        parameters: list[dict[str, Any]] | None = None,
    ) -> type[Operation]:
        return operation_class(
            name,
            request_body=json_body(schemas, body) if body is not None else None,
            parameters=parameters,
            responses={**ok(type_, description, limited=False), **schemas.refusals(refusals)},
            security=OPERATOR_SECURITY,
        )

    job_id = [path_param("request_id", "The request_id a job tool answered with.")]
    top_up_answer = {
        **ok(wire.TopUpRecord, "Credited (or already credited: `already_credited: true`)."),
        **ok(wire.TopUpRecord, "Paid, still settling: `status: pending`; retry with the same payment to read it again.", status="202"),
    }
    for answer in top_up_answer.values():
        answer["headers"] = {**answer["headers"], **PAYMENT_RESPONSE_HEADER}
    return {
        "healthz": operation_class("healthz", responses=ok(wire.Health, "The service is up.", limited=False), security=[]),
        "balance": read("balance", wire.Balance, "Credits and on-chain USDC of the caller."),
        "credits_top_up": operation_class(
            "credits_top_up",
            request_body=json_body(schemas, wire.TopUpRequest),
            parameters=[payment_parameter(schemas, "payment-signature"), quote_parameter(schemas)],
            responses={**top_up_answer, **schemas.refusals((400, 401, 402, 404, 409, 422, 429, 500, 503), rate_limited=True)},
            security=[{"agentId": []}, {}],
        ),
        "receipt_keys": operation_class("receipt_keys", responses=ok(wire.ReceiptKeys, "The receipt signing public keys.", limited=False), security=[]),
        "receipt_get": read("receipt_get", wire.Receipt, "One of the caller's receipts, as signed.", [path_param("receipt_id", "rcpt_...")]),
        "analytics_receipts": read(
            "analytics_receipts",
            wire.ReceiptPage,
            "The caller's receipts, newest first.",
            [
                query("period", "Days back (omitted: all).", _PERIOD),
                query("category", "Receipt category.", {"type": "string", "enum": list(CATEGORIES)}),
                query("limit", "At most 100 (larger is clamped).", {"type": "integer", "minimum": 1, "default": 50}),
                query("offset", "Receipts to skip.", {"type": "integer", "minimum": 0, "default": 0}),
                query("since", "ISO 8601, inclusive bound on created_at.", {"type": "string", "format": "date-time"}),
                query("until", "ISO 8601, inclusive bound on created_at.", {"type": "string", "format": "date-time"}),
            ],
        ),
        "analytics_spend_breakdown": read(
            "analytics_spend_breakdown", wire.SpendBreakdown, "Spend by category.", [query("period", "Days back (default 30).", {**_PERIOD, "default": 30})]
        ),
        "job_status": read("job_status", wire.JobStatus, "The Job.", job_id),
        "job_status_alias": read("job_status_alias", wire.JobStatus, "The Job (same as GET /v1/requests/{request_id}).", job_id),
        "notifications": read(
            "notifications",
            wire.NotificationPage,
            "The caller's notifications, newest first.",
            [
                query("unread", "Only unread ones.", {"type": "boolean", "default": False}),
                query("limit", "At most 100 (larger is clamped).", {"type": "integer", "minimum": 1, "default": 50}),
            ],
        ),
        "auth_sign_in": operation_class(
            "auth_sign_in",
            responses={
                **ok(wire.AccessToken, "An access token of origin `sign_in`: unlike an operator-issued one, it may change the agent's watches."),
                **schemas.refusals((400, 401, 403, 429), rate_limited=True),
            },
            security=[{"agentId": [], "agentProof": []}],
        ),
        "operator_register_agent": operator("operator_register_agent", wire.RegisteredAgent, "The agent.", wire.RegisterAgentRequest),
        "operator_grant_credits": operator(
            "operator_grant_credits", wire.CreditsGranted, "Credits granted.", wire.GrantCreditsRequest, (400, 401, 404)
        ),
        "operator_access_token": operator(
            "operator_access_token", wire.AccessToken, "A new access token for the agent.", wire.AccessTokenRequest, (400, 401, 404)
        ),
        "operator_chain_fund": operator(
            "operator_chain_fund", wire.ChainFunded, "Test USDC minted (local network only).", wire.ChainFundRequest, (400, 401, 403)
        ),
        "operator_poll_watch_source": operator(
            "operator_poll_watch_source", wire.WatchSourcePolled,
            "One poll of a watch source now; answered once its changes are recorded and queued for delivery.", refusals=(401, 404),
            parameters=[path_param("attribute", "The watchable attribute, e.g. `us_treasury_sanctions`.")],
        ),
        "operator_pending": operator("operator_pending", wire.PendingReport, "Money in an intermediate state, and why.", refusals=(401,)),
    }
