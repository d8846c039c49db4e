"""Refunds: a charged call that failed (docs/receipts.md) gives its amount back
to the payer's credits (x402 payments included: the USDC has moved, so it comes
back as credits) and its receipt is re-signed as `refunded` (revision + 1).

A receipt is refunded at most once: the status flips from a charged status to
`refunded` by one conditional update, inside the same transaction as the credit.
A receipt whose x402 settlement is still `pending` cannot be refunded yet (the
money may never arrive): it becomes `refund_due`, and the reconciler credits
the refund once the payment settles, or marks it `not_charged` if it never does.
"""

from __future__ import annotations

from typing import Any

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.money import usdc
from tollway._core.credits import ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.receipts.receipts import ReceiptBook
from tollway._core.receipts.tables import Receipt
from tollway._core.storage import sql

RETURN_KIND = "unspent_return"  # the ledger kind of a charge's unused part given back

REFUNDABLE = ("settled", "pending")
# Raw: one guarded update whose new status depends on the old one (`CASE`, which the ORM has
# not): a settled charge becomes `refunded`, a pending one `refund_due`, at most once.
_REFUND = (
    "UPDATE tw_receipts SET status = CASE WHEN status = 'pending' THEN 'refund_due' ELSE 'refunded' END "
    "WHERE receipt_id = {} AND status IN ('settled', 'pending') RETURNING agent_id, amount, status"
)


class Refunds:
    """Gives charged amounts back as credits, re-signing the receipts."""

    def __init__(self, *, db: Any, receipts: ReceiptBook) -> None:
        self.db = db
        self.receipts = receipts

    async def refund_to_credits(
        self, receipt_id: str, *, reason: str, changes: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        async with self.db.transaction():
            row = await sql.fetch_one(_REFUND, receipt_id)
            if row is None:
                raise ServiceError(409, "not_refundable", f"Receipt {receipt_id} is not a charge that can be refunded.")
            if row["status"] == "refunded":
                await ledger.credit_credits(
                    row["agent_id"], int(row["amount"]), kind="refund", reference=receipt_id, memo=reason
                )
            return await self.receipts.revise(
                receipt_id, {**(changes or {}), "status": row["status"], "refund_reason": reason}
            )

    @staticmethod
    async def refundable(receipt_id: str) -> bool:
        """Whether the receipt is a charge a refund can give back (not one never charged)."""
        row = await Receipt.select(Receipt.status).where(Receipt.receipt_id == receipt_id).first()
        return row is not None and row["status"] in REFUNDABLE

    async def refund_when_settled(self, receipt_id: str, changes: dict[str, Any]) -> bool:
        """Credit a `refund_due` receipt whose payment has now settled; False if it is not one."""
        async with self.db.transaction():
            moved = await (
                Receipt.update({Receipt.status: "refunded"})
                .where((Receipt.receipt_id == receipt_id) & (Receipt.status == "refund_due"))
                .returning(Receipt.agent_id, Receipt.amount)
            )
            if not moved:
                return False
            row = moved[0]
            await ledger.credit_credits(
                row["agent_id"], int(row["amount"]), kind="refund", reference=receipt_id, memo="refund_due"
            )
            await self.receipts.revise(receipt_id, {**changes, "status": "refunded"})
            return True

    async def return_unspent(self, receipt_id: str, amount: int, *, reason: str) -> dict[str, Any] | None:
        """Give back the part of a settled charge its call did not use (a goal's unspent
        budget) to the payer's credits, at most once per receipt: the receipt is re-signed
        with `returned_usdc` and `return_reason`. None when there is nothing to give back or
        it was given already. Runs in the caller's transaction when there is one."""
        if amount <= 0:
            return None
        async with self.db.transaction():
            row = (
                await Receipt.select(Receipt.agent_id, Receipt.amount, Receipt.status)
                .where(Receipt.receipt_id == receipt_id)
                .first()
            )
            if row is None or row["status"] != "settled" or amount > int(row["amount"]):
                raise ServiceError(
                    409, "not_returnable", f"Receipt {receipt_id} is not a settled charge of at least {usdc(amount)}."
                )
            if await LedgerEntry.exists().where(
                (LedgerEntry.kind == RETURN_KIND) & (LedgerEntry.reference == receipt_id)
            ):
                return None
            await ledger.credit_credits(row["agent_id"], amount, kind=RETURN_KIND, reference=receipt_id, memo=reason)
            return await self.receipts.revise(receipt_id, {"returned_usdc": usdc(amount), "return_reason": reason})
