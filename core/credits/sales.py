"""Sales between agents: the seller's share of a settled charge credited to the seller's
agent, the rest kept as the platform's `service_fee`, and the seller's own signed receipt.

`pay_share` runs in the caller's transaction: it locks the buyer's receipt, refuses one
whose payment has not settled (or was refunded), credits the share once per receipt
(ledger kind `sale_share`, referencing the buyer's receipt) and issues the seller a
receipt of status `earned` (not spend: analytics count charges only) carrying the same
`job_id`, `soul_agent_id`, the share as `amount_usdc` and the fee as `service_fee`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.money import usdc
from tollway._core.credits import ledger
from tollway._core.receipts.receipts import ReceiptBook, ReceiptDraft
from tollway._core.storage import sql

SHARE_KIND = "sale_share"
OUTSIDE_CREDIT_KIND = "outside_sale_credit"  # credits bought with money paid outside the service (a PSP charge)
EARNED = "earned"  # the status of a seller's receipt
SHARE_METHOD = "sale_share"  # its payment_method


class Sales:
    def __init__(self, *, db: Any, receipts: ReceiptBook) -> None:
        self.db = db
        self.receipts = receipts

    async def pay_share(self, receipt_id: str, *, seller_agent_id: str, share: int) -> dict[str, Any] | None:
        """Credit `share` (micro-USDC) of the buyer's settled receipt to the seller and issue
        the seller's receipt; the fee is the rest. None when the share was paid already."""
        async with self.db.transaction():
            row = await sql.fetch_one(  # the no-op update locks the row against a concurrent refund
                "UPDATE tw_receipts SET status = status WHERE receipt_id = {} RETURNING amount, status, body",
                receipt_id,
            )
            if row is None:
                raise LookupError(receipt_id)
            if row["status"] != "settled":
                raise ServiceError(
                    409,
                    "payment_not_settled",
                    f"The buyer's payment is {row['status']}, not settled: nothing can be paid out of it yet.",
                )
            amount = int(row["amount"])
            if not 0 <= share <= amount:
                raise ValueError(f"a share of {share} is not within the charge of {amount}")
            if await sql.fetch_one(
                "SELECT id FROM tw_ledger WHERE kind = {} AND reference = {}", SHARE_KIND, receipt_id
            ):
                return None
            body = msgspec.json.decode(row["body"])
            await ledger.credit_credits(
                seller_agent_id, share, kind=SHARE_KIND, reference=receipt_id, memo=body.get("tool")
            )
            fee = amount - share
            if body.get("service_fee") != usdc(fee):
                await self.receipts.revise(receipt_id, {"service_fee": usdc(fee)})
            return await self.receipts.issue(
                ReceiptDraft(
                    agent_id=seller_agent_id,
                    category=body["category"],
                    subcategory=body.get("subcategory"),
                    amount=share,
                    status=EARNED,
                    execution_status="completed",
                    settlement_tx=None,
                    payment_method=SHARE_METHOD,
                    tool=body.get("tool"),
                    request_id=body.get("request_id"),
                    job_id=body.get("job_id"),
                    soul_agent_id=body.get("soul_agent_id"),
                    service_fee=fee,
                    goal_id=body.get("goal_id"),
                )
            )

    async def record_outside_sale(
        self,
        *,
        agent_id: str,
        amount: int,
        payment_method: str,
        payment_reference: str,
        category: str,
        subcategory: str | None,
        tool: str,
        request_id: str,
        credit: int = 0,
        soul_agent_id: str | None = None,
        service_fee: int = 0,
        memo: str | None = None,
    ) -> dict[str, Any]:
        """A sale paid outside the service (a card charge through a payment service provider):
        the buyer's signed receipt of `amount` (micro-USDC), settled by `payment_reference`,
        and, when `credit` is given, that much of it credited to the buyer's credits (ledger
        kind `outside_sale_credit`, referencing the receipt). In the caller's transaction, so
        the receipt, the credit and whatever the caller writes beside them commit together; a
        seller's share is then `pay_share` of the receipt, as for any settled charge."""
        if not 0 <= credit <= amount:
            raise ValueError(f"a credit of {credit} is not within the sale of {amount}")
        async with self.db.transaction():
            receipt = await self.receipts.issue(
                ReceiptDraft(
                    agent_id=agent_id,
                    category=category,
                    subcategory=subcategory,
                    amount=amount,
                    status="settled",
                    execution_status="completed",
                    payment_method=payment_method,
                    settlement_tx=payment_reference,
                    tool=tool,
                    request_id=request_id,
                    job_id=request_id,
                    memo=memo,
                    soul_agent_id=soul_agent_id,
                    service_fee=service_fee,
                )
            )
            if credit:
                await ledger.credit_credits(
                    agent_id, credit, kind=OUTSIDE_CREDIT_KIND, reference=receipt["receipt_id"], memo=tool
                )
            return receipt


__all__ = ["EARNED", "OUTSIDE_CREDIT_KIND", "SHARE_KIND", "SHARE_METHOD", "Sales"]
