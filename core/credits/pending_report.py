"""The operator's view of money in an intermediate state (`tollway reconcile`, the pending
report route): credit holds, payments and top-ups, receipts waiting for their payment, and
payouts not yet known paid, each with its age and why it is there."""

from __future__ import annotations

from tollway._core.basics.ids import now_ms
from tollway._core.basics.money import usdc
from tollway._core.credits.payouts import Payout
from tollway._core.credits.tables import CreditHold, TopUpAttempt
from tollway._core.credits.top_ups import TOP_UP_PURPOSE
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.storage import sql
from tollway._core.wire.accounts import PendingItem, PendingReport

# Receipts waiting for their payment: the few of millions, read through the partial index
# tw_receipts_unsettled (its predicate written out with the same literals, so that both
# engines' planners can prove the query within it; a bound parameter would hide that).
UNSETTLED_RECEIPTS = sql.statement(
    "SELECT receipt_id, agent_id, tool, amount, status, created_ms FROM tw_receipts "
    "WHERE status IN ('pending', 'refund_due') ORDER BY created_ms"
)
_WHY_PAYMENT = {
    "reserved": "verified, not yet sent for settlement (its call is running, or its process died)",
    "settling": "sent for settlement, no answer yet",
    "pending": "the settlement's outcome is not known yet; asked again every reconciliation",
}


async def pending_report(reconcile_after_s: float, reconcile_interval_s: float) -> PendingReport:
    now = now_ms()

    def age(ms: int) -> float:
        return round((now - int(ms)) / 1000, 3)

    held = (
        await CreditHold.select(
            CreditHold.id, CreditHold.agent_id, CreditHold.amount, CreditHold.tool, CreditHold.created_ms
        )
        .where(CreditHold.state == "held")
        .order_by(CreditHold.created_ms)
    )
    Auth = PaymentAuthorization
    intermediate = Auth.status.is_in(list(_WHY_PAYMENT))
    payments = (
        await Auth.select(
            Auth.id,
            Auth.payer,
            Auth.value,
            Auth.purpose,
            Auth.status,
            Auth.receipt_id,
            Auth.created_ms,
            Auth.updated_ms,
        )
        .where(intermediate)
        .order_by(Auth.created_ms)
    )
    # why a top-up is still pending, from its attempt (a payment for a tool has none)
    why = {
        r["id"]: r["reason"]
        for r in await TopUpAttempt.select(TopUpAttempt.id, TopUpAttempt.reason).where(
            TopUpAttempt.id.is_in(Auth.select(Auth.id).where(intermediate))
        )
    }
    receipts = await UNSETTLED_RECEIPTS.rows()
    payouts = (
        await Payout.select(
            Payout.id, Payout.agent_id, Payout.amount, Payout.reason, Payout.created_ms, Payout.updated_ms
        )
        .where(Payout.status == "sending")
        .order_by(Payout.created_ms)
    )
    items = (
        [
            PendingItem(
                kind="credit_hold",
                id=r["id"],
                agent_id=r["agent_id"],
                amount_usdc=usdc(int(r["amount"])),
                tool=r["tool"],
                state="held",
                age_s=age(r["created_ms"]),
                reason="the call is running, or its process died before writing its receipt",
            )
            for r in held
        ]
        + [
            PendingItem(
                kind="top_up" if r["purpose"] == TOP_UP_PURPOSE else "payment",
                id=r["id"],
                payer=r["payer"],
                amount_usdc=usdc(int(r["value"])),
                tool=r["purpose"],
                state=r["status"],
                receipt_id=r["receipt_id"],
                age_s=age(r["created_ms"]),
                last_checked_s=age(r["updated_ms"]),
                reason=why.get(r["id"]) or _WHY_PAYMENT[r["status"]],
            )
            for r in payments
        ]
        + [
            PendingItem(
                kind="receipt",
                id=r["receipt_id"],
                agent_id=r["agent_id"],
                amount_usdc=usdc(int(r["amount"])),
                tool=r["tool"],
                state=r["status"],
                age_s=age(r["created_ms"]),
                reason="waiting for its payment to settle",
            )
            for r in receipts
        ]
        + [
            PendingItem(
                kind="payout",
                id=r["id"],
                agent_id=r["agent_id"],
                amount_usdc=usdc(int(r["amount"])),
                tool=None,
                state="sending",
                age_s=age(r["created_ms"]),
                last_checked_s=age(r["updated_ms"]),
                reason=r["reason"]
                or "sent for settlement, no answer yet; its credits stay held until it is known paid or unusable",
            )
            for r in payouts
        ]
    )
    return PendingReport(
        pending=items, count=len(items), reconcile_after_s=reconcile_after_s, reconcile_interval_s=reconcile_interval_s
    )


__all__ = ["pending_report"]
