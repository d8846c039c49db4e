"""The operator's view of money in an intermediate state (`tollway reconcile`, the pending
report route): credit holds, payments and top-ups, receipts waiting for their payment, and
payouts not yet known paid, each with its age and why it is there."""

from __future__ import annotations

from tollway._core.basics.ids import now_ms
from tollway._core.basics.money import usdc
from tollway._core.credits.top_ups import TOP_UP_PURPOSE
from tollway._core.storage import sql
from tollway._core.wire.accounts import PendingItem, PendingReport

_WHY_PAYMENT = {
    "reserved": "verified, not yet sent for settlement (its call is running, or its process died)",
    "settling": "sent for settlement, no answer yet",
    "pending": "the settlement's outcome is not known yet; asked again every reconciliation",
}


async def pending_report(reconcile_after_s: float, reconcile_interval_s: float) -> PendingReport:
    now = now_ms()

    def age(ms: int) -> float:
        return round((now - int(ms)) / 1000, 3)

    held = await sql.fetch(
        "SELECT id, agent_id, amount, tool, created_ms FROM tw_credit_holds WHERE state = 'held' ORDER BY created_ms"
    )
    payments = await sql.fetch(
        "SELECT a.id, a.payer, a.value, a.purpose, a.status, a.receipt_id, a.created_ms, a.updated_ms, t.reason FROM tw_payment_authorizations a "
        "LEFT JOIN tw_top_up_attempts t ON t.id = a.id WHERE a.status IN ('reserved', 'settling', 'pending') ORDER BY a.created_ms"
    )
    receipts = await sql.fetch(
        "SELECT receipt_id, agent_id, tool, amount, status, created_ms FROM tw_receipts WHERE status IN ('pending', 'refund_due') ORDER BY created_ms"
    )
    payouts = await sql.fetch(
        "SELECT id, agent_id, amount, reason, created_ms, updated_ms FROM tw_payouts WHERE status = 'sending' ORDER BY created_ms"
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
                reason=r["reason"] or _WHY_PAYMENT[r["status"]],
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
