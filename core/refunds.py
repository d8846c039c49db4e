"""Refunds: a charged call that failed (docs/receipts.md) gives its amount back
to the payer's credits (x402 payments included: the USDC has moved, so it comes
back as credits) and its receipt is re-signed as `refunded` (revision + 1).

A receipt is refunded at most once: the status flips from a charged status to
`refunded` by one conditional update, inside the same transaction as the credit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ledger, sql
from .errors import ServiceError

if TYPE_CHECKING:
    from .kernel import Kernel

REFUNDABLE = ("settled", "pending")


class Refunds:
    """Mixin of `Kernel`."""

    async def refund_to_credits(
        self: "Kernel", receipt_id: str, *, reason: str, changes: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        async with self.db.transaction():
            row = await sql.fetch_one(
                "UPDATE tw_receipts SET status = 'refunded' WHERE receipt_id = {} AND status IN ({}, {}) RETURNING agent_id, amount",
                receipt_id, *REFUNDABLE,
            )
            if row is None:
                raise ServiceError(409, "not_refundable", f"Receipt {receipt_id} is not a charge that can be refunded.")
            await ledger.credit_credits(row["agent_id"], int(row["amount"]), kind="refund", reference=receipt_id, memo=reason)
            return await self.receipts.revise(receipt_id, {**(changes or {}), "status": "refunded", "refund_reason": reason})
