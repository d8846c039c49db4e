"""Credit top-up by x402 (POST /v1/credits/top-up): 402 priced at `amount`, then
credit exactly once, whatever the settlement does.

Every accepted payment gets an attempt row (keyed by its authorization) before
it is sent for settlement. A settlement that answers late leaves the attempt
`pending`: the caller is told so (202, never a fresh 402 for money that may have
moved), a retry of the same payment returns the same record, and the reconciler
credits it once the settlement's fate is known. The credit, its ledger row, the
top-up record, the receipt and the `credit_issued` notification commit together.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import msgspec

from tollway._core.auth.tables import Agent
from tollway._core.basics.errors import ServiceError, invalid_request
from tollway._core.basics.ids import now_ms
from tollway._core.basics.money import AmountError, to_micro, usdc
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.credits import ledger
from tollway._core.credits.tables import CreditTopUp, TopUpAttempt
from tollway._core.jobs import notifications
from tollway._core.payments.eip3009 import authorization_key
from tollway._core.payments.gateway import PaymentFailed, X402Gateway, find_payment_header
from tollway._core.payments.settlement import SettlementResult
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.receipts.receipts import ReceiptDraft
from tollway._core.wire.accounts import TopUpRecord

log = logging.getLogger("tollway.top_ups")

TOP_UP_MIN = 10_000  # 0.01 USDC
TOP_UP_MAX = 1_000 * 1_000_000
TOP_UP_PURPOSE = "credits_top_up"
IN_PROGRESS_RETRY_AFTER_S = 1


def decimal_body(body: bytes) -> dict[str, Any]:
    """Decode with JSON numbers as Decimal so amounts never pass through a float."""
    if not body.strip():
        return {}
    try:
        obj = msgspec.json.Decoder(float_hook=Decimal).decode(body)
    except msgspec.DecodeError as exc:
        raise invalid_request("The request body is not valid JSON.", [{"field": "$", "message": str(exc)}]) from exc
    if not isinstance(obj, dict):
        raise invalid_request(
            "The request body must be a JSON object.", [{"field": "$", "message": "expected an object"}]
        )
    return obj


# No amount the service takes goes above this (1e9 USDC): ledger columns are 64-bit integers.
AMOUNT_MAX = 1_000_000_000 * 1_000_000


def parse_amount(value: Any, *, field: str = "amount", code: str = "invalid_request") -> int:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str, Decimal)):
            raise AmountError("not a number")
        micro = to_micro(value)
    except AmountError as exc:
        raise ServiceError(
            400,
            code,
            f"{field} must be a USDC amount with at most 6 decimals.",
            [{"field": field, "message": str(exc)}],
        ) from exc
    if abs(micro) > AMOUNT_MAX:
        raise ServiceError(
            400,
            code,
            f"{field} must be at most {AMOUNT_MAX // 1_000_000} USDC.",
            [{"field": field, "message": "too large"}],
        )
    return micro


def _request(body: bytes) -> tuple[int, str | None]:
    """The validated (amount, memo) of a top-up request, or a 400."""
    obj = decimal_body(body)
    if "amount" not in obj:
        raise ServiceError(
            400,
            "invalid_amount",
            "amount is required (USDC, 0.01 to 1000).",
            [{"field": "amount", "message": "is required"}],
        )
    amount = parse_amount(obj["amount"], code="invalid_amount")
    if not TOP_UP_MIN <= amount <= TOP_UP_MAX:
        raise ServiceError(
            400,
            "invalid_amount",
            "amount must be from 0.01 to 1000 USDC.",
            [{"field": "amount", "message": "must be from 0.01 to 1000"}],
        )
    details = []
    memo = obj.get("memo")
    if memo is not None and (not isinstance(memo, str) or len(memo) > 1000):
        details.append({"field": "memo", "message": "memo must be a string of at most 1000 characters"})
    details += [
        {"field": name, "message": f"{name} is not an accepted field"} for name in sorted(set(obj) - {"amount", "memo"})
    ]
    if details:
        raise invalid_request(f"Invalid request: {', '.join(d['field'] for d in details)}.", details)
    return amount, memo


class TopUps:
    """The top-up flow and its completion (also called by the reconciler)."""

    def __init__(self, *, db: Any, gateway: X402Gateway, agents: Any, receipts: Any) -> None:
        self.db = db
        self.gateway = gateway
        self.agents = agents
        self.receipts = receipts

    async def top_up(self, req: CallRequest) -> Answer:
        auth = req.header("authorization") or ""
        if auth[:7].lower() == "bearer ":
            raise ServiceError(
                503,
                "route_unavailable_for_access_tokens",
                "Credits top-up needs a wallet session, not an access token.",
            )
        amount, memo = _request(req.body)
        input_hash = f"top-up:{amount}"
        header = find_payment_header(req.headers)

        async def refuse(
            failure: PaymentFailed | None = None, settlement: dict[str, Any] | None = None
        ) -> ServiceError:
            return await self.gateway.payment_required(
                purpose=TOP_UP_PURPOSE,
                description="Prepaid credits",
                input_hash=input_hash,
                amount=amount,
                resource_url=req.url,
                failure=failure,
                settlement=settlement,
            )

        if not header:
            raise await refuse()
        try:
            payment = self.gateway.decode(header)
            retried = await self._retry(payment, amount)
            if retried is not None:
                return retried
            quote, payer = await self.gateway.verify(
                payment, req.header("x-quote-id"), purpose=TOP_UP_PURPOSE, input_hash=input_hash
            )
            accepted = await self.gateway.reserve(payment, quote, payer, TOP_UP_PURPOSE)
        except PaymentFailed as failure:
            raise await refuse(failure) from failure
        now = now_ms()
        await TopUpAttempt.insert(
            TopUpAttempt(
                id=accepted.key,
                payer=accepted.payer.lower(),
                amount=amount,
                memo=memo,
                status="pending",
                settlement_tx=None,
                reason=None,
                created_ms=now,
                updated_ms=now,
            )
        )
        result = await self.gateway.settle(accepted)
        await self.gateway.record(accepted, result.status, result.transaction)
        answer = await self.finish(accepted.key, result)
        if answer.status == 402:  # the settlement said no: nothing moved, nothing credited
            failure = PaymentFailed(
                result.reason or "settlement_failed",
                f"The payment did not settle: {result.reason or result.status}; nothing was credited.",
            )
            raise await refuse(failure, self.gateway.settlement(accepted, result))
        return answer

    async def _retry(self, payment: Any, amount: int) -> Answer | None:
        """A resubmitted payment: its record in whatever state it is, never a second credit."""
        key = authorization_key(self.gateway.network, payment.authorization)
        auth = (
            await PaymentAuthorization.select(
                PaymentAuthorization.status, PaymentAuthorization.payload, PaymentAuthorization.purpose
            )
            .where(PaymentAuthorization.id == key)
            .first()
        )
        if auth is None or auth["purpose"] != TOP_UP_PURPOSE:
            return None  # a new payment (or one for a tool: the nonce check refuses it later)
        if (
            payment.signature.lower()
            != msgspec.json.decode(auth["payload"]).get("payload", {}).get("signature", "").lower()
        ):
            return None  # not the same signed payment: the nonce check refuses it later
        # Read after the payment: the attempt is never behind the state read above (it is
        # written before the payment is sent for settlement), and every step taken below
        # from a state that moved on meanwhile is a guarded one.
        attempt = (
            await TopUpAttempt.select(TopUpAttempt.amount, TopUpAttempt.status, TopUpAttempt.settlement_tx)
            .where(TopUpAttempt.id == key)
            .first()
        )
        if attempt is None:  # reserved a moment ago, its attempt not written yet
            raise self._in_progress()
        if int(attempt["amount"]) != amount:
            raise ServiceError(
                422,
                "idempotency_key_reused",
                f"This payment already paid for a top-up of {usdc(int(attempt['amount']))} USDC; a different amount needs a new payment.",
                {"paid_amount": usdc(int(attempt["amount"])), "requested_amount": usdc(amount)},
            )
        if attempt["status"] == "credited":
            return Answer(200, await self._record(key, already=True))
        if attempt["status"] == "failed":
            return None  # nothing moved: the nonce check answers the 402 with its reason
        if auth["status"] == "settled" and attempt["settlement_tx"] is None:
            # settled, but this process died before crediting: credit now
            return await self.finish(key, SettlementResult("settled", await self._auth_tx(key)))
        if auth["status"] in ("reserved", "settling"):
            raise self._in_progress()
        return Answer(202, await self._record(key, already=False))

    async def _auth_tx(self, key: str) -> str | None:
        row = (
            await PaymentAuthorization.select(PaymentAuthorization.settlement_tx)
            .where(PaymentAuthorization.id == key)
            .first()
        )
        return row["settlement_tx"] if row else None

    @staticmethod
    def _in_progress() -> ServiceError:
        return ServiceError(
            409,
            "top_up_in_progress",
            "This payment is being credited right now; retry in a moment with the same payment.",
            headers={"Retry-After": str(IN_PROGRESS_RETRY_AFTER_S)},
            extra={"retry_after": IN_PROGRESS_RETRY_AFTER_S},
        )

    async def finish(self, key: str, result: SettlementResult) -> Answer:
        """Apply a settlement outcome to the attempt `key`: credit it (200), keep it
        pending (202) or mark it failed (402 for the caller to turn into a refusal)."""
        if result.status == "settled" and result.transaction:
            return await self._credit(key, result.transaction)
        if result.status == "failed":
            await TopUpAttempt.update(
                {
                    TopUpAttempt.status: "failed",
                    TopUpAttempt.reason: result.reason or "settlement_failed",
                    TopUpAttempt.updated_ms: now_ms(),
                }
            ).where((TopUpAttempt.id == key) & (TopUpAttempt.status == "pending"))
            return Answer(402, {})
        await TopUpAttempt.update(
            {TopUpAttempt.reason: result.reason or "settlement_pending", TopUpAttempt.updated_ms: now_ms()}
        ).where((TopUpAttempt.id == key) & (TopUpAttempt.status == "pending"))
        return Answer(202, await self._record(key, already=False))

    async def _credit(self, key: str, settlement_tx: str) -> Answer:
        attempt = (
            await TopUpAttempt.select(TopUpAttempt.payer, TopUpAttempt.amount, TopUpAttempt.memo, TopUpAttempt.status)
            .where(TopUpAttempt.id == key)
            .first()
        )
        if attempt is None:
            raise LookupError(key)
        if attempt["status"] == "credited":
            return Answer(200, await self._record(key, already=True))
        payer, amount, memo = attempt["payer"], int(attempt["amount"]), attempt["memo"]
        agent_id = await self.agents.for_wallet(payer)
        try:
            async with self.db.transaction():
                won = await (  # one guarded update: of a retry and the reconciler, one credits it
                    TopUpAttempt.update(
                        {
                            TopUpAttempt.status: "credited",
                            TopUpAttempt.settlement_tx: settlement_tx,
                            TopUpAttempt.reason: None,
                            TopUpAttempt.updated_ms: now_ms(),
                        }
                    )
                    .where((TopUpAttempt.id == key) & (TopUpAttempt.status == "pending"))
                    .returning(TopUpAttempt.id)
                )
                if not won:  # a concurrent retry or the reconciler credited it first
                    raise _AlreadyCredited()
                balance, txn_id = await ledger.credit_credits(
                    agent_id, amount, kind="top_up", reference=settlement_tx, memo=memo
                )
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
                await self.receipts.issue(
                    ReceiptDraft(
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
                )
                await notifications.notify(
                    agent_id,
                    "credit_issued",
                    f"{usdc(amount)} USDC of credits added",
                    memo,
                    {
                        "amount": usdc(amount),
                        "credits_balance": usdc(balance),
                        "source": "top_up",
                        "settlement_tx": settlement_tx,
                        "transactionId": txn_id,
                    },
                )
        except _AlreadyCredited:
            return Answer(200, await self._record(key, already=True))
        except Exception as exc:
            log.exception("top-up %s settled (%s) but the credit failed", key, settlement_tx)
            raise ServiceError(
                500,
                "top_up_settled_not_credited",
                "The payment settled but the credit could not be written; retry with the same payment.",
                extra={"settlement_tx": settlement_tx},
            ) from exc
        return Answer(
            200,
            TopUpRecord(
                status="credited",
                topped_up=usdc(amount),
                credits_balance=usdc(balance),
                transaction_id=txn_id,
                settlement_tx=settlement_tx,
                already_credited=False,
            ),
        )

    async def _record(self, key: str, *, already: bool) -> TopUpRecord:
        """The Credit top-up record (docs/payments.md) (plus `status`); a pending one credits nothing yet."""
        attempt = (
            await TopUpAttempt.select(
                TopUpAttempt.payer, TopUpAttempt.amount, TopUpAttempt.status, TopUpAttempt.settlement_tx
            )
            .where(TopUpAttempt.id == key)
            .first()
        )
        if attempt["status"] == "credited":
            row = await CreditTopUp.select().where(CreditTopUp.settlement_tx == attempt["settlement_tx"]).first()
            return TopUpRecord(
                status="credited",
                topped_up=usdc(int(row["amount"])),
                credits_balance=usdc(int(row["credits_balance"])),
                transaction_id=row["transaction_id"],
                settlement_tx=row["settlement_tx"],
                already_credited=already,
            )
        agent = await Agent.select(Agent.credits).where(Agent.wallet_address == attempt["payer"]).first()
        return TopUpRecord(
            status="pending",
            topped_up=usdc(0),
            amount=usdc(int(attempt["amount"])),
            credits_balance=usdc(int(agent["credits"]) if agent else 0),
            transaction_id=None,
            settlement_tx=None,
            already_credited=False,
            message="The payment is still settling; the credits are added as soon as it settles. "
            "Retry with the same payment to read this record again.",
        )


class _AlreadyCredited(Exception):
    pass


__all__ = ["TopUps", "TOP_UP_PURPOSE", "decimal_body", "parse_amount"]
