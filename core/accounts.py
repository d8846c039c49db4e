"""Account operations: balance, credit top-up by x402, and the operator routes
(register agent, grant credits, access tokens, fund the local test network)."""
from __future__ import annotations

import logging
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec
from eth_utils import to_checksum_address

from . import ledger
from .agents import is_address
from .errors import ServiceError, invalid_request
from .ids import iso, now_ms
from .money import AmountError, to_micro, usdc
from .payments.gateway import PaymentFailed, find_payment_header
from .request import CallRequest
from .tables import Agent, CreditTopUp, PaymentAuthorization
from .validation import convert, decode_object

if TYPE_CHECKING:
    from .kernel import Kernel

log = logging.getLogger("tollway.accounts")

TOP_UP_MIN = 10_000  # 0.01 USDC
TOP_UP_MAX = 1_000 * 1_000_000
TOP_UP_PURPOSE = "credits_top_up"


def _amount(value: Any, *, field: str = "amount", code: str = "invalid_request") -> int:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str, Decimal)):
            raise AmountError("not a number")
        return to_micro(value)
    except AmountError as exc:
        raise ServiceError(400, code, f"{field} must be a USDC amount with at most 6 decimals.", [{"field": field, "message": str(exc)}]) from exc


def _decimal_body(body: bytes) -> dict[str, Any]:
    """Decode with JSON numbers as Decimal so amounts never pass through a float."""
    if not body.strip():
        return {}
    try:
        obj = msgspec.json.Decoder(float_hook=Decimal).decode(body)
    except msgspec.DecodeError as exc:
        raise invalid_request("The request body is not valid JSON.", [{"field": "$", "message": str(exc)}]) from exc
    if not isinstance(obj, dict):
        raise invalid_request("The request body must be a JSON object.", [{"field": "$", "message": "expected an object"}])
    return obj


class RegisterBody(msgspec.Struct, forbid_unknown_fields=True):
    wallet_address: str | None = None
    name: str | None = None


class AccessTokenBody(msgspec.Struct, forbid_unknown_fields=True):
    agent_id: str


class Accounts:
    """Mixin of `Kernel`."""

    async def balance(self: "Kernel", req: CallRequest) -> dict[str, Any]:
        caller = await self.auth.caller(req, scope="read")
        if caller is None:
            raise ServiceError(401, "unauthorized", "Send X-Agent-ID (wallet address or agent UUID).")
        agent = await Agent.select(Agent.credits, Agent.wallet_address).where(Agent.id == caller.agent_id).first()
        wallet = agent["wallet_address"] if agent else caller.wallet
        on_chain = None
        if wallet and self.backend is not None:
            on_chain = await self.backend.on_chain_balance(wallet)
        return {
            "on_chain_balance": usdc(on_chain) if on_chain is not None else None,
            "credits_balance": usdc(int(agent["credits"]) if agent else 0),
            "currency": "USDC",
            "address": to_checksum_address(wallet) if wallet else None,
            "chain_id": self.network.chain_id,
            "agent_id": caller.agent_id if agent else None,  # None: a bare X-Agent-ID of a wallet with no agent yet
        }

    async def top_up(self: "Kernel", req: CallRequest) -> dict[str, Any]:
        """POST /v1/credits/top-up: 402 priced at `amount`, then credit exactly once."""
        auth = req.header("authorization") or ""
        if auth[:7].lower() == "bearer ":
            raise ServiceError(503, "route_unavailable_for_access_tokens", "Credits top-up needs a wallet session, not an access token.")
        obj = _decimal_body(req.body)
        if "amount" not in obj:
            raise ServiceError(400, "invalid_amount", "amount is required (USDC, 0.01 to 1000).", [{"field": "amount", "message": "is required"}])
        amount = _amount(obj["amount"], code="invalid_amount")
        if not TOP_UP_MIN <= amount <= TOP_UP_MAX:
            raise ServiceError(400, "invalid_amount", "amount must be from 0.01 to 1000 USDC.", [{"field": "amount", "message": "must be from 0.01 to 1000"}])
        memo = obj.get("memo")
        if memo is not None and (not isinstance(memo, str) or len(memo) > 1000):
            raise invalid_request("memo must be a string of at most 1000 characters.", [{"field": "memo", "message": "at most 1000 characters"}])
        unknown = sorted(set(obj) - {"amount", "memo"})
        if unknown:
            raise invalid_request(f"Unknown field {unknown[0]}.", [{"field": unknown[0], "message": f"{unknown[0]} is not an accepted field"}])
        gateway = self.gateway
        assert gateway is not None
        input_hash = f"top-up:{amount}"
        header = find_payment_header(req.headers)
        if not header:
            raise await gateway.payment_required(
                purpose=TOP_UP_PURPOSE, description="Prepaid credits", input_hash=input_hash, amount=amount, resource_url=req.url
            )
        try:
            payment = gateway.decode(header)
            existing = await self._existing_top_up(payment, amount)
            if existing is not None:
                return existing
            quote, payer = await gateway.verify(payment, req.header("x-quote-id"), purpose=TOP_UP_PURPOSE, input_hash=input_hash)
            accepted = await gateway.reserve(payment, quote, payer, TOP_UP_PURPOSE)
        except PaymentFailed as failure:
            raise await gateway.payment_required(
                purpose=TOP_UP_PURPOSE, description="Prepaid credits", input_hash=input_hash, amount=amount, resource_url=req.url, failure=failure
            ) from failure
        result = await gateway.settle(accepted)
        await gateway.record(accepted, result.status, result.transaction)
        if result.status != "settled" or not result.transaction:
            failure = PaymentFailed(result.reason or "settlement_failed", f"The payment did not settle: {result.reason or result.status}; nothing was credited.")
            raise await gateway.payment_required(
                purpose=TOP_UP_PURPOSE, description="Prepaid credits", input_hash=input_hash, amount=amount, resource_url=req.url, failure=failure
            )
        return await self._credit_top_up(accepted.payer, amount, result.transaction, memo)

    async def _existing_top_up(self: "Kernel", payment: Any, amount: int) -> dict[str, Any] | None:
        """A resubmitted top-up payment: the same row, or a retry of the credit."""
        from .payments.eip3009 import authorization_key

        row = await PaymentAuthorization.select().where(PaymentAuthorization.id == authorization_key(self.network, payment.authorization)).first()
        if row is None or row["purpose"] != TOP_UP_PURPOSE or row["status"] != "settled" or not row["settlement_tx"]:
            return None
        if payment.signature.lower() != msgspec.json.decode(row["payload"]).get("payload", {}).get("signature", "").lower():
            return None  # not the same signed payment: the nonce check refuses it later
        return await self._credit_top_up(row["payer"], int(row["value"]), row["settlement_tx"], None)

    async def _credit_top_up(self: "Kernel", payer: str, amount: int, settlement_tx: str, memo: str | None) -> dict[str, Any]:
        agent_id = await self.agents.for_wallet(payer)
        existing = await CreditTopUp.select().where(CreditTopUp.settlement_tx == settlement_tx).first()
        if existing:
            return self._top_up_record(existing, already=True)
        try:
            async with self.db.transaction():
                balance, txn_id = await ledger.credit_credits(agent_id, amount, kind="top_up", reference=settlement_tx, memo=memo)
                inserted = (
                    await CreditTopUp.insert(
                        CreditTopUp(
                            settlement_tx=settlement_tx,
                            transaction_id=txn_id,
                            agent_id=agent_id,
                            amount=amount,
                            credits_balance=balance,
                            memo=memo,
                            created_ms=now_ms(),
                        )
                    )
                    .on_conflict(action="DO NOTHING")
                    .returning(CreditTopUp.settlement_tx)
                )
                if not inserted:
                    raise _AlreadyCredited()
                await self.receipts.issue(
                    agent_id=agent_id,
                    category="infrastructure",
                    subcategory="credits_top_up",
                    amount=amount,
                    status="settled",
                    execution_status="completed",
                    settlement_tx=settlement_tx,
                    payment_method="x402",
                    tool="credits_top_up",
                    request_id=txn_id,
                    memo=memo,
                )
        except _AlreadyCredited:
            row = await CreditTopUp.select().where(CreditTopUp.settlement_tx == settlement_tx).first()
            return self._top_up_record(row, already=True)
        except Exception as exc:
            log.exception("top-up %s settled but the credit failed", settlement_tx)
            raise ServiceError(
                500,
                "top_up_settled_not_credited",
                "The payment settled but the credit could not be written; retry with the same payment.",
                extra={"settlement_tx": settlement_tx},
            ) from exc
        return {
            "topped_up": usdc(amount),
            "credits_balance": usdc(balance),
            "transaction_id": txn_id,
            "settlement_tx": settlement_tx,
            "already_credited": False,
        }

    @staticmethod
    def _top_up_record(row: dict[str, Any], *, already: bool) -> dict[str, Any]:
        return {
            "topped_up": usdc(int(row["amount"])),
            "credits_balance": usdc(int(row["credits_balance"])),
            "transaction_id": row["transaction_id"],
            "settlement_tx": row["settlement_tx"],
            "already_credited": already,
        }

    # -- operator routes -------------------------------------------------------------
    async def register_agent(self: "Kernel", req: CallRequest) -> dict[str, Any]:
        self.auth.require_operator(req)
        body = convert(decode_object(req.body), RegisterBody)
        row = await self.agents.register(body.wallet_address, body.name)
        return {"agent_id": row["id"], "wallet_address": row["wallet_address"], "name": row["name"], "created_at": iso(row["created_ms"])}

    async def grant_credits(self: "Kernel", req: CallRequest) -> dict[str, Any]:
        self.auth.require_operator(req)
        obj = _decimal_body(req.body)
        unknown = sorted(set(obj) - {"agent_id", "amount", "memo"})
        if unknown:
            raise invalid_request(f"Unknown field {unknown[0]}.", [{"field": unknown[0], "message": "is not an accepted field"}])
        agent_ref = obj.get("agent_id")
        if not isinstance(agent_ref, str):
            raise invalid_request("agent_id is required.", [{"field": "agent_id", "message": "is required"}])
        if "amount" not in obj:
            raise invalid_request("amount is required.", [{"field": "amount", "message": "is required"}])
        amount = _amount(obj["amount"])
        if amount <= 0:
            raise invalid_request("amount must be positive.", [{"field": "amount", "message": "must be positive"}])
        memo = obj.get("memo")
        if memo is not None and (not isinstance(memo, str) or len(memo) > 1000):
            raise invalid_request("memo must be a string of at most 1000 characters.", [{"field": "memo", "message": "at most 1000 characters"}])
        agent = await self.agents.get(agent_ref)
        if agent is None:
            if is_address(agent_ref):
                agent = {"id": await self.agents.for_wallet(agent_ref)}
            else:
                raise ServiceError(404, "agent_not_found", f"No agent {agent_ref}.")
        async with self.db.transaction():
            balance, txn_id = await ledger.credit_credits(agent["id"], amount, kind="grant", memo=memo)
        return {"agent_id": agent["id"], "credits_balance": usdc(balance), "transaction_id": txn_id}

    async def issue_access_token(self: "Kernel", req: CallRequest) -> dict[str, Any]:
        self.auth.require_operator(req)
        body = convert(decode_object(req.body), AccessTokenBody)
        agent = await self.agents.get(body.agent_id)
        if agent is None:
            raise ServiceError(404, "agent_not_found", f"No agent {body.agent_id}.")
        token, expires = await self.auth.issue_access_token(agent["id"], self.config.access_token_ttl_s)
        return {"token": token, "agent_id": agent["id"], "expires_at": iso(expires)}

    async def fund_chain(self: "Kernel", address: str, amount: int) -> int:
        """Mint test USDC on the embedded local network (never elsewhere)."""
        if self.network.name != "local":
            raise ServiceError(403, "local_network_only", "Funding exists only on the local test network.")
        if not is_address(address):
            raise invalid_request("address must be a 0x address.", [{"field": "address", "message": "expected 0x + 40 hex"}])
        if amount <= 0:
            raise invalid_request("amount must be positive.", [{"field": "amount", "message": "must be positive"}])
        async with self.db.transaction():
            return await ledger.chain_credit(self.network.chain_id, address, amount, kind="fund")

    async def fund_chain_request(self: "Kernel", req: CallRequest) -> dict[str, Any]:
        self.auth.require_operator(req)
        obj = _decimal_body(req.body)
        address = obj.get("address")
        if not isinstance(address, str):
            raise invalid_request("address is required.", [{"field": "address", "message": "is required"}])
        if "amount" not in obj:
            raise invalid_request("amount is required.", [{"field": "amount", "message": "is required"}])
        after = await self.fund_chain(address, _amount(obj["amount"]))
        return {"address": address, "on_chain_balance": usdc(after)}


class _AlreadyCredited(Exception):
    pass
