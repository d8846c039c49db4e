"""Sales between agents: the seller's share of a settled charge credited to the seller's
agent, the rest kept as the platform's `service_fee`, and the seller's own signed receipt.

`pay_share` runs in the caller's transaction: it locks the buyer's receipt, refuses one
whose payment has not settled (or was refunded), credits the share once per receipt
(ledger kind `sale_share`, referencing the buyer's receipt) and issues the seller a
receipt of status `earned` (not spend: analytics count charges only) carrying the same
`job_id`, `soul_agent_id`, the share as `amount_usdc` and the fee as `service_fee`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.money import usdc
from tollway._core.credits import ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.receipts.receipts import ReceiptBook, ReceiptDraft
from tollway._core.receipts.tables import Receipt
from tollway._core.storage import sql

SHARE_KIND = "sale_share"
OUTSIDE_CREDIT_KIND = "outside_sale_credit"  # credits bought with money paid outside the service (a PSP charge)
EARNED = "earned"  # the status of a seller's receipt
SHARE_METHOD = "sale_share"  # its payment_method
# Refunds of sales paid outside the service (docs/commerce.md, "Refunds"):
OUTSIDE_REVERSAL_KIND = "outside_sale_reversal"  # credits a refunded outside sale bought, taken back
SHARE_REVERSAL_KIND = "sale_share_reversal"  # a seller's share of a refunded sale, taken back
REFUND_CREDIT_KIND = "outside_refund_credit"  # a refund an outside seller made of a purchase, credited to its buyer
REFUND = "refund"  # the status of a refund's own receipt (not a charge: analytics do not count it)
_LEDGER_SUM = (
    "SELECT COALESCE(SUM(delta), 0) AS total FROM tw_ledger WHERE account = {} AND kind = {} AND reference = {}"
)
_EARNINGS = (
    "SELECT COALESCE(SUM(delta), 0) AS total FROM tw_ledger WHERE account = {} "
    "AND kind IN ('sale_share', 'sale_share_reversal', 'payout', 'payout_return')"
)
_REFUNDED = "SELECT COALESCE(SUM(amount), 0) AS total FROM tw_receipts WHERE job_id = {} AND status = 'refund'"
_REFUND_RECEIPT = "SELECT body FROM tw_receipts WHERE receipt_id = {} AND status = 'refund'"


def refund_receipt_id(refund_id: str) -> str:
    """A refund's receipt id, derived from the refund's id: one receipt per refund."""
    return "rcpt_rf_" + hashlib.sha256(refund_id.encode()).hexdigest()[:24]


class Sales:
    def __init__(self, *, db: Any, receipts: ReceiptBook) -> None:
        self.db = db
        self.receipts = receipts

    async def pay_share(self, receipt_id: str, *, seller_agent_id: str, share: int) -> dict[str, Any] | None:
        """Credit `share` (micro-USDC) of the buyer's settled receipt to the seller and issue
        the seller's receipt; the fee is the rest. None when the share was paid already."""
        async with self.db.transaction():
            locked = await (  # the no-op update locks the row against a concurrent refund
                Receipt.update({Receipt.status: Receipt.status})
                .where(Receipt.receipt_id == receipt_id)
                .returning(Receipt.amount, Receipt.status, Receipt.body)
            )
            if not locked:
                raise LookupError(receipt_id)
            row = locked[0]
            if row["status"] != "settled":
                raise ServiceError(
                    409,
                    "payment_not_settled",
                    f"The buyer's payment is {row['status']}, not settled: nothing can be paid out of it yet.",
                )
            amount = int(row["amount"])
            if not 0 <= share <= amount:
                raise ValueError(f"a share of {share} is not within the charge of {amount}")
            if await LedgerEntry.exists().where(
                (LedgerEntry.kind == SHARE_KIND) & (LedgerEntry.reference == receipt_id)
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

    async def refund_outside_sale(
        self, receipt_id: str, *, refund_id: str, amount: int, payment_reference: str, reason: str
    ) -> dict[str, Any]:
        """The seller's side of a refund of `amount` (micro-USDC) of an outside sale, the money
        already given back outside (the PSP refunded the card): what the sale moved is taken
        back in proportion to the part refunded — credits it bought from its buyer, a share
        from its seller — each never below a zero balance (what was spent stays spent) nor a
        seller's earnings below what it withdrew; and the buyer gets a receipt of status
        `refund`, request id `refund_id`. Refunds of one receipt never add up above its
        amount; the same `refund_id` answers its receipt again. In the caller's transaction.
        Answers `{receipt, credits_taken, share_taken}` (micro-USDC taken back)."""
        async with self.db.transaction():
            sale = await self._locked(receipt_id)
            done = await sql.fetch_one(_REFUND_RECEIPT, refund_receipt_id(refund_id))
            if done is not None:  # made already: its receipt, nothing taken again
                return {"receipt": msgspec.json.decode(done["body"]), "credits_taken": 0, "share_taken": 0}
            price = int(sale["amount"])
            refunded = int((await sql.fetch_one(_REFUNDED, sale["job_id"]))["total"])
            if not 0 < amount <= price - refunded:
                raise ServiceError(
                    409, "exceeds_paid", f"A refund of {usdc(amount)} is more than the {usdc(price - refunded)} left."
                )
            buyer = sale["agent_id"]
            bought = int(
                (await sql.fetch_one(_LEDGER_SUM, f"credits:{buyer}", OUTSIDE_CREDIT_KIND, receipt_id))["total"]
            )
            taken = -int(
                (await sql.fetch_one(_LEDGER_SUM, f"credits:{buyer}", OUTSIDE_REVERSAL_KIND, receipt_id))["total"]
            )
            credits = await _take_up_to(
                buyer,
                min(_part(bought, refunded, amount, price), bought - taken),
                kind=OUTSIDE_REVERSAL_KIND,
                reference=receipt_id,
            )
            share = 0
            paid = await LedgerEntry.select(LedgerEntry.account, LedgerEntry.delta).where(
                (LedgerEntry.kind == SHARE_KIND) & (LedgerEntry.reference == receipt_id)
            )
            if paid:
                seller = paid[0]["account"].removeprefix("credits:")
                earned = int(paid[0]["delta"])
                back = -int(
                    (await sql.fetch_one(_LEDGER_SUM, paid[0]["account"], SHARE_REVERSAL_KIND, receipt_id))["total"]
                )
                earnings = int((await sql.fetch_one(_EARNINGS, paid[0]["account"]))["total"])
                share = await _take_up_to(
                    seller,
                    min(_part(earned, refunded, amount, price), earned - back, earnings),
                    kind=SHARE_REVERSAL_KIND,
                    reference=receipt_id,
                )
            memo = (
                f"refund {refund_id} of {receipt_id}: {reason}; credits taken back {usdc(credits)}, "
                f"seller's share taken back {usdc(share)}"
            )
            receipt = await self._refund_receipt(sale, refund_id, amount, payment_reference, memo)
            return {"receipt": receipt, "credits_taken": credits, "share_taken": share}

    async def credit_outside_refund(
        self, receipt_id: str, *, refund_id: str, amount: int, limit: int, reason: str
    ) -> dict[str, Any] | None:
        """The buyer's side of a refund an outside seller made of a purchase paid by the
        receipt `receipt_id`: `amount` (micro-USDC) credited to the receipt's agent (ledger kind
        `outside_refund_credit`), never more in all than `limit` (what the purchase cost the
        agent, at most the receipt's amount), with a receipt of status `refund`, request id
        `refund_id`. None when `refund_id` was credited already or nothing is left under the
        limit. In the caller's transaction."""
        async with self.db.transaction():
            sale = await self._locked(receipt_id)
            if await sql.fetch_one(_REFUND_RECEIPT, refund_receipt_id(refund_id)) is not None:
                return None
            buyer = sale["agent_id"]
            credited = int(
                (await sql.fetch_one(_LEDGER_SUM, f"credits:{buyer}", REFUND_CREDIT_KIND, receipt_id))["total"]
            )
            give = min(amount, min(limit, int(sale["amount"])) - credited)
            if give <= 0:
                return None
            await ledger.credit_credits(buyer, give, kind=REFUND_CREDIT_KIND, reference=receipt_id, memo=refund_id)
            return await self._refund_receipt(
                sale, refund_id, give, None, f"refund {refund_id} of {receipt_id}: {reason}"
            )

    @staticmethod
    async def _locked(receipt_id: str) -> dict[str, Any]:
        """The settled receipt, locked against a concurrent refund of it (a no-op update)."""
        locked = await (
            Receipt.update({Receipt.status: Receipt.status})
            .where(Receipt.receipt_id == receipt_id)
            .returning(Receipt.agent_id, Receipt.amount, Receipt.status, Receipt.job_id, Receipt.body)
        )
        if not locked:
            raise LookupError(receipt_id)
        if locked[0]["status"] != "settled":
            raise ServiceError(409, "not_refundable", f"Receipt {receipt_id} is {locked[0]['status']}, not settled.")
        return locked[0]

    async def _refund_receipt(
        self, sale: dict[str, Any], refund_id: str, amount: int, reference: str | None, memo: str
    ) -> dict[str, Any]:
        body = msgspec.json.decode(sale["body"])
        return await self.receipts.issue(
            ReceiptDraft(
                receipt_id=refund_receipt_id(refund_id),
                agent_id=sale["agent_id"],
                category=body["category"],
                subcategory=REFUND,
                amount=amount,
                status=REFUND,
                execution_status="completed",
                settlement_tx=reference,
                payment_method=body["payment_method"],
                tool=body.get("tool"),
                request_id=refund_id,
                job_id=sale["job_id"],
                soul_agent_id=body.get("soul_agent_id"),
                memo=memo,
            )
        )


def _part(whole: int, refunded: int, amount: int, price: int) -> int:
    """The part of `whole` a refund of `amount` after `refunded` stands for, of a sale of
    `price`: cumulatively rounded down, so the parts of a full refund add up to `whole`."""
    return whole * (refunded + amount) // price - whole * refunded // price


async def _take_up_to(agent_id: str, want: int, *, kind: str, reference: str) -> int:
    """Debit at most `want` of the agent's credits, never below zero; what was taken."""
    for _ in range(5):  # a concurrent spend may lower the balance between the read and the debit
        take = min(want, await ledger.credits_of(agent_id))
        if take <= 0:
            return 0
        if await ledger.debit_credits(agent_id, take, kind=kind, reference=reference) is not None:
            return take
    return 0


__all__ = [
    "EARNED",
    "OUTSIDE_CREDIT_KIND",
    "OUTSIDE_REVERSAL_KIND",
    "REFUND",
    "REFUND_CREDIT_KIND",
    "SHARE_KIND",
    "SHARE_METHOD",
    "SHARE_REVERSAL_KIND",
    "Sales",
]
