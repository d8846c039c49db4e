"""Account operations: balance and the operator routes (register agent, grant
credits, access tokens, fund the local test network); top-ups live in core/credits/top_ups.py."""

from __future__ import annotations

import logging
from typing import Any

from eth_utils import to_checksum_address

from tollway._core import wire
from tollway._core.auth.agents import AgentDirectory, is_address
from tollway._core.auth.auth import Authenticator, Caller
from tollway._core.auth.tables import Agent
from tollway._core.basics.errors import ServiceError, invalid_request
from tollway._core.basics.ids import iso
from tollway._core.basics.money import usdc
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.basics.validation import decode_object
from tollway._core.credits import ledger
from tollway._core.credits.reconciler import Reconciler
from tollway._core.credits.top_ups import TopUps, decimal_body, parse_amount
from tollway._core.jobs import notifications
from tollway._core.payments.networks import Network
from tollway._core.payments.settlement import SettlementBackend

log = logging.getLogger("tollway.accounts")


def signing_in(caller: Caller | None, req: CallRequest) -> Caller:
    """Who may sign in (the sign-in route's `caller_check`): a write proof signed by the
    wallet in X-Agent-ID, or a wallet the front holds the key of; never an access token."""
    if caller is None:
        raise ServiceError(
            401, "unauthorized", "Signing in needs X-Agent-ID (the wallet address) and a write X-Agent-Proof."
        )
    if caller.via == "token":
        raise ServiceError(
            403, "sign_in_needs_proof", "An access token cannot sign in; sign in with the wallet's write proof."
        )
    if caller.via == "id":
        raise ServiceError(
            401,
            "invalid_agent_proof",
            "Signing in needs a write X-Agent-Proof signed by the wallet in X-Agent-ID.",
            {"reason": "missing"},
        )
    return caller


class Accounts:
    """An agent's balance and top-ups, and the operator's account routes."""

    def __init__(
        self,
        *,
        db: Any,
        auth: Authenticator,
        agents: AgentDirectory,
        network: Network,
        backend: SettlementBackend,
        top_ups: TopUps,
        reconciler: Reconciler,
        access_token_ttl_s: int,
    ) -> None:
        self.db = db
        self.auth = auth
        self.agents = agents
        self.network = network
        self.backend = backend
        self.top_ups = top_ups
        self.reconciler = reconciler
        self.access_token_ttl_s = access_token_ttl_s

    async def balance(self, caller: Caller) -> wire.Balance:
        agent = await Agent.select(Agent.credits, Agent.wallet_address).where(Agent.id == caller.agent_id).first()
        wallet = agent["wallet_address"] if agent else caller.wallet
        on_chain = None
        if wallet:
            on_chain = await self.backend.on_chain_balance(wallet)
        return wire.Balance(
            on_chain_balance=usdc(on_chain) if on_chain is not None else None,
            credits_balance=usdc(int(agent["credits"]) if agent else 0),
            currency="USDC",
            address=to_checksum_address(wallet) if wallet else None,
            chain_id=self.network.chain_id,
            agent_id=caller.agent_id if agent else None,  # None: a bare X-Agent-ID of a wallet with no agent yet
        )

    async def top_up(self, req: CallRequest) -> Answer:
        """POST /v1/credits/top-up (core/credits/top_ups.py)."""
        return await self.top_ups.top_up(req)

    # -- operator routes (the route runner checks the operator token) -------------------
    async def register_agent(self, body: wire.RegisterAgentRequest) -> wire.RegisteredAgent:
        row = await self.agents.register(body.wallet_address, body.name)
        return wire.RegisteredAgent(
            agent_id=row["id"],
            wallet_address=row["wallet_address"],
            name=row["name"],
            created_at=iso(row["created_ms"]),
        )

    async def grant_credits(self, raw: bytes) -> wire.CreditsGranted:
        obj = decimal_body(raw)
        unknown = sorted(set(obj) - {"agent_id", "amount", "memo"})
        if unknown:
            raise invalid_request(
                f"Unknown field {unknown[0]}.", [{"field": unknown[0], "message": "is not an accepted field"}]
            )
        agent_ref = obj.get("agent_id")
        if not isinstance(agent_ref, str):
            raise invalid_request("agent_id is required.", [{"field": "agent_id", "message": "is required"}])
        if "amount" not in obj:
            raise invalid_request("amount is required.", [{"field": "amount", "message": "is required"}])
        amount = parse_amount(obj["amount"])
        if amount <= 0:
            raise invalid_request("amount must be positive.", [{"field": "amount", "message": "must be positive"}])
        memo = obj.get("memo")
        if memo is not None and (not isinstance(memo, str) or len(memo) > 1000):
            raise invalid_request(
                "memo must be a string of at most 1000 characters.",
                [{"field": "memo", "message": "at most 1000 characters"}],
            )
        return await self.grant(agent_ref, amount, memo)

    async def grant(self, agent_ref: str, amount: int, memo: str | None) -> wire.CreditsGranted:
        """Credit `amount` (micro-USDC, positive) to an agent (its id, or a wallet address, which
        gets an agent if it has none) as a `grant` ledger row, and notify it: the operator route's
        work, and the console's (`Platform.grant_credits`)."""
        if amount <= 0:
            raise invalid_request("amount must be positive.", [{"field": "amount", "message": "must be positive"}])
        agent = await self.agents.get(agent_ref)
        if agent is None:
            if is_address(agent_ref):
                agent = {"id": await self.agents.for_wallet(agent_ref)}
            else:
                raise ServiceError(404, "agent_not_found", f"No agent {agent_ref}.")
        async with self.db.transaction():
            balance, txn_id = await ledger.credit_credits(agent["id"], amount, kind="grant", memo=memo)
            await notifications.notify(
                agent["id"],
                "credit_issued",
                f"{usdc(amount)} USDC of credits granted",
                memo,
                {"amount": usdc(amount), "credits_balance": usdc(balance), "source": "grant", "transactionId": txn_id},
            )
        return wire.CreditsGranted(agent_id=agent["id"], credits_balance=usdc(balance), transaction_id=txn_id)

    async def pending_report(self) -> wire.PendingReport:
        """GET /v1/tools/internal/pending: money in an intermediate state, and why."""
        return await self.reconciler.pending()

    async def issue_access_token(self, body: wire.AccessTokenRequest) -> wire.AccessToken:
        agent = await self.agents.get(body.agent_id)
        if agent is None:
            raise ServiceError(404, "agent_not_found", f"No agent {body.agent_id}.")
        token, expires = await self.auth.issue_access_token(agent["id"], self.access_token_ttl_s)
        return wire.AccessToken(token=token, agent_id=agent["id"], expires_at=iso(expires))

    async def sign_in(self, req: CallRequest, caller: Caller | None = None) -> wire.AccessToken:
        """POST /v1/auth/sign-in: the owner proves the wallet with a write proof (or is a
        wallet the front holds the key of) and gets an access token of origin `sign_in`,
        which, unlike an operator-issued one, may change the agent's watches. `caller` is
        the one the route runner checked (`signing_in`); without it the request's own."""
        if caller is None:
            caller = signing_in(await self.auth.caller(req, scope="write"), req)
        unknown = sorted(decode_object(req.body))
        if unknown:
            raise invalid_request(
                f"Signing in takes no fields: {', '.join(unknown)}.",
                [{"field": name, "message": f"{name} is not an accepted field"} for name in unknown],
            )
        token, expires = await self.auth.issue_access_token(caller.agent_id, self.access_token_ttl_s, origin="sign_in")
        return wire.AccessToken(token=token, agent_id=caller.agent_id, expires_at=iso(expires))

    async def fund_chain(self, address: str, amount: int) -> int:
        """Mint test USDC on the embedded local network (never elsewhere)."""
        if self.network.name != "local":
            raise ServiceError(403, "local_network_only", "Funding exists only on the local test network.")
        if not is_address(address):
            raise invalid_request(
                "address must be a 0x address.", [{"field": "address", "message": "expected 0x + 40 hex"}]
            )
        if amount <= 0:
            raise invalid_request("amount must be positive.", [{"field": "amount", "message": "must be positive"}])
        async with self.db.transaction():
            return await ledger.chain_credit(self.network.chain_id, address, amount, kind="fund")

    async def fund_chain_request(self, raw: bytes) -> wire.ChainFunded:
        obj = decimal_body(raw)
        address = obj.get("address")
        if not isinstance(address, str):
            raise invalid_request("address is required.", [{"field": "address", "message": "is required"}])
        if "amount" not in obj:
            raise invalid_request("amount is required.", [{"field": "amount", "message": "is required"}])
        after = await self.fund_chain(address, parse_amount(obj["amount"]))
        return wire.ChainFunded(address=address, on_chain_balance=usdc(after))
