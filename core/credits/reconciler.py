"""The reconciler: nothing stays in an intermediate money state.

It runs every `TOLLWAY_RECONCILE_INTERVAL_S` in each serving and worker process
(and once by `tollway reconcile`), and resolves what a crash or a late
settlement left half done:

* a credit hold still `held` past the grace period (its process died between
  debit and receipt): refunded, with a receipt saying so;
* a payment authorization `reserved` past the grace period (verified, never sent
  for settlement): voided — no money moved;
* a payment `settling` past the grace period or `pending` (its settlement answer
  never came): the settlement backend is asked for its fate; a settled payment is
  recorded (its pending receipt re-signed `settled` and a job waiting for it
  started; a top-up credited; a call whose answer was lost refunded to credits),
  a failed one released (a job waiting for it failed `payment_failed`, charged
  nothing: core/jobs/job_payments.py).

Several processes may run it at once: every step is a conditional update from
the state it found, so each row is resolved once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from tollway._core.auth.agents import AgentDirectory
from tollway._core.basics.events import EventBus
from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.money import usdc
from tollway._core.credits import holds
from tollway._core.credits.pending_report import pending_report
from tollway._core.credits.refunds import Refunds
from tollway._core.credits.tables import TopUpAttempt
from tollway._core.credits.top_ups import TOP_UP_PURPOSE, TopUps
from tollway._core.jobs import job_payments
from tollway._core.payments.gateway import X402Gateway
from tollway._core.payments.settlement import SettlementResult
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.plugin_api.tool import Tool
from tollway._core.receipts.receipts import ReceiptBook, ReceiptDraft
from tollway._core.receipts.tables import Receipt
from tollway._core.wire.accounts import PendingReport

log = logging.getLogger("tollway.reconciler")

INTERRUPTED = "interrupted"  # refund reason of a call whose process died mid-way


def _failed_call(tool: Tool | None, name: str, **fields: Any) -> ReceiptDraft:
    """The receipt of a paid call the reconciler ends failed (charged, then refunded):
    the tool's category, or `data` when the tool is no longer registered."""
    category, subcategory = (tool.category, tool.subcategory or tool.name) if tool else ("data", name)
    return ReceiptDraft(
        category=category, subcategory=subcategory, tool=name, status="settled", execution_status="failed", **fields
    )


class Reconciler:
    def __init__(
        self,
        *,
        db: Any,
        tools: Mapping[str, Tool],
        agents: AgentDirectory,
        receipts: ReceiptBook,
        refunds: Refunds,
        gateway: X402Gateway,
        top_ups: TopUps,
        events: EventBus,
        reconcile_after_s: float,
        reconcile_interval_s: float,
    ) -> None:
        self.db = db
        self.tools = tools
        self.agents = agents
        self.receipts = receipts
        self.refunds = refunds
        self.gateway = gateway
        self.top_ups = top_ups
        self.events = events
        self.reconcile_after_s = reconcile_after_s
        self.reconcile_interval_s = reconcile_interval_s

    @property
    def grace_ms(self) -> int:
        return int(self.reconcile_after_s * 1000)

    async def run_once(self, *, grace_s: float | None = None) -> dict[str, int]:
        """One pass; `grace_s` overrides how old an intermediate state must be."""
        grace = self.grace_ms if grace_s is None else int(grace_s * 1000)
        cutoff = now_ms() - grace
        summary = {
            "holds_refunded": 0,
            "payments_voided": 0,
            "payments_settled": 0,
            "payments_failed": 0,
            "payments_pending": 0,
            "top_ups_credited": 0,
        }
        for row in await holds.held_before(cutoff + 1):
            try:
                refunded = await self._refund_hold(row)
            except Exception:
                log.exception("refunding hold %s failed", row["id"])
                continue
            summary["holds_refunded"] += refunded
        Auth = PaymentAuthorization
        for row in await Auth.select(Auth.id).where((Auth.status == "reserved") & (Auth.updated_ms <= cutoff)):
            if await self._void(row["id"]):
                summary["payments_voided"] += 1
        # Pending payments are asked at most once per interval; settling ones once stale.
        asked_before = cutoff if grace_s is not None else now_ms() - int(self.reconcile_interval_s * 1000)
        for row in await Auth.select().where(
            ((Auth.status == "settling") & (Auth.updated_ms <= cutoff))
            | ((Auth.status == "pending") & (Auth.updated_ms <= asked_before))
        ):
            try:
                outcome = await self._resolve_payment(row)
            except Exception:  # one payment's trouble must not stop the others; the next pass retries
                log.exception("reconciling payment %s failed", row["id"])
                continue
            if outcome:
                summary[f"payments_{outcome}"] += 1
        # Settled top-ups whose credit failed (the client may never retry).
        for row in await Auth.select(Auth.id, Auth.settlement_tx).where(
            (Auth.status == "settled")
            & (Auth.updated_ms <= cutoff)
            & Auth.id.is_in(TopUpAttempt.select(TopUpAttempt.id).where(TopUpAttempt.status == "pending"))
        ):
            try:
                answer = await self.top_ups.finish(row["id"], SettlementResult("settled", row["settlement_tx"]))
            except Exception:  # the store still refuses it: the next pass tries again
                log.exception("crediting settled top-up %s failed", row["id"])
                continue
            if answer.status == 200 and not answer.body.already_credited:
                summary["top_ups_credited"] += 1
        if any(summary.values()):
            log.info("reconciled: %s", summary)
        return summary

    # -- credit holds ------------------------------------------------------------------
    async def _refund_hold(self, row: dict[str, Any]) -> bool:
        tool = self.tools.get(row["tool"])
        async with self.db.transaction():
            if not await holds.end(row["id"], "refunded"):
                return False  # the call ended it after all
            await self.receipts.issue(
                _failed_call(
                    tool,
                    row["tool"],
                    receipt_id=row["receipt_id"],
                    agent_id=row["agent_id"],
                    amount=int(row["amount"]),
                    settlement_tx=None,
                    payment_method="credits",
                    request_id=row["id"],
                    memo=row["memo"],
                    decision_context=holds.decision_context_of(row),
                )
            )
            await self.refunds.refund_to_credits(row["receipt_id"], reason=INTERRUPTED)
        log.warning("refunded credit hold %s (%s USDC): its call never finished", row["id"], usdc(int(row["amount"])))
        return True

    # -- payments ----------------------------------------------------------------------
    async def _void(self, key: str) -> bool:
        """A reservation never sent for settlement: nothing moved."""
        async with self.db.transaction():
            voided = await (
                PaymentAuthorization.update(
                    {PaymentAuthorization.status: "voided", PaymentAuthorization.updated_ms: now_ms()}
                )
                .where((PaymentAuthorization.id == key) & (PaymentAuthorization.status == "reserved"))
                .returning(PaymentAuthorization.purpose)
            )
            if not voided:
                return False
            if voided[0]["purpose"] == TOP_UP_PURPOSE:
                await TopUpAttempt.update(
                    {
                        TopUpAttempt.status: "failed",
                        TopUpAttempt.reason: "never_settled",
                        TopUpAttempt.updated_ms: now_ms(),
                    }
                ).where((TopUpAttempt.id == key) & (TopUpAttempt.status == "pending"))
        return True

    async def _claim(self, row: dict[str, Any]) -> bool:
        """Take this row for this pass (another process may be looking at it too)."""
        Auth = PaymentAuthorization
        claimed = await (
            Auth.update({Auth.updated_ms: now_ms()})
            .where((Auth.id == row["id"]) & (Auth.status == row["status"]) & (Auth.updated_ms == row["updated_ms"]))
            .returning(Auth.id)
        )
        return bool(claimed)

    async def _resolve_payment(self, row: dict[str, Any]) -> str | None:
        gateway = self.gateway
        if not await self._claim(row):
            return None
        accepted = gateway.accepted_from_row(row)
        result = await gateway.fate(accepted)
        if row["purpose"] == TOP_UP_PURPOSE:
            return await self._resolve_top_up(row, result)
        if result.status == "pending":
            await self._mark(row["id"], "pending", None, from_states=("settling", "pending"))
            return "pending"
        if result.status == "failed":
            return await self._call_not_paid(row, result)
        return await self._call_paid(row, result)

    async def _mark(
        self, key: str, status: str, tx: str | None, *, from_states: tuple[str, ...], receipt_id: str | None = None
    ) -> bool:
        Auth = PaymentAuthorization
        values: dict[Any, Any] = {Auth.status: status, Auth.updated_ms: now_ms()}
        if tx is not None:  # else the transaction it has stays
            values[Auth.settlement_tx] = tx
        if receipt_id is not None:
            values[Auth.receipt_id] = receipt_id
        moved = await (
            Auth.update(values).where((Auth.id == key) & Auth.status.is_in(list(from_states))).returning(Auth.id)
        )
        return bool(moved)

    async def _resolve_top_up(self, row: dict[str, Any], result: SettlementResult) -> str:
        top_ups = self.top_ups
        await self._mark(row["id"], result.status, result.transaction, from_states=("settling", "pending"))
        await top_ups.finish(row["id"], result)
        return result.status

    async def _call_paid(self, row: dict[str, Any], result: SettlementResult) -> str:
        """The USDC moved. A receipt left `pending` is re-signed settled (a refund
        owed is credited now); a call that never wrote its receipt — its answer
        was lost with its process — is refunded to the payer's credits."""
        settled = {"settlement_tx": result.transaction, "settled_at": iso(now_ms())}
        receipt_id, started = row["receipt_id"], None
        if receipt_id:
            async with self.db.transaction():
                if not await self._mark(row["id"], "settled", result.transaction, from_states=("settling", "pending")):
                    return "settled"
                if not await self.refunds.refund_when_settled(receipt_id, settled):
                    moved = await (
                        Receipt.update({Receipt.status: "settled"})
                        .where((Receipt.receipt_id == receipt_id) & (Receipt.status == "pending"))
                        .returning(Receipt.receipt_id)
                    )
                    if moved:
                        await self.receipts.revise(receipt_id, {**settled, "status": "settled"})
                        started = await job_payments.payment_settled(
                            self.tools, receipt_id, self.events
                        )  # its job starts now
            await job_payments.announce(self.events, started, "started")
            return "settled"
        tool = self.tools.get(row["purpose"])
        agent_id = await self.agents.for_wallet(row["payer"])
        try:
            await self._refund_lost_answer(row, result, tool, agent_id)
        except _Lost:
            pass
        return "settled"

    async def _refund_lost_answer(
        self, row: dict[str, Any], result: SettlementResult, tool: Any, agent_id: str
    ) -> None:
        async with self.db.transaction():
            receipt = await self.receipts.issue(
                _failed_call(
                    tool,
                    row["purpose"],
                    agent_id=agent_id,
                    amount=int(row["value"]),
                    settlement_tx=result.transaction,
                    payment_method="x402",
                    request_id=None,
                )
            )
            if not await self._mark(
                row["id"],
                "settled",
                result.transaction,
                from_states=("settling", "pending"),
                receipt_id=receipt["receipt_id"],
            ):
                raise _Lost()
            await self.refunds.refund_to_credits(receipt["receipt_id"], reason=INTERRUPTED)

    async def _call_not_paid(self, row: dict[str, Any], result: SettlementResult) -> str:
        receipt_id, failed = row["receipt_id"], None
        async with self.db.transaction():
            if not await self._mark(row["id"], "failed", None, from_states=("settling", "pending")):
                return "failed"
            if receipt_id:
                moved = await (
                    Receipt.update({Receipt.status: "not_charged"})
                    .where((Receipt.receipt_id == receipt_id) & Receipt.status.is_in(["pending", "refund_due"]))
                    .returning(Receipt.receipt_id)
                )
                if moved:
                    failed = await job_payments.payment_failed(
                        receipt_id, result.reason, self.events
                    )  # its job never started
                    changes = {
                        "status": "not_charged",
                        "settlement_failure": result.reason,
                        **({"execution_status": "failed"} if failed else {}),
                    }
                    await self.receipts.revise(receipt_id, changes)
        await job_payments.announce(self.events, failed, "failed")
        return "failed"

    # -- the operator's view -------------------------------------------------------------
    async def pending(self) -> PendingReport:
        """Everything in an intermediate state now, with its age and why (core/credits/pending_report.py)."""
        return await pending_report(self.reconcile_after_s, self.reconcile_interval_s)


class _Lost(Exception):
    """Another reconciler resolved the payment first; this one's receipt is rolled back."""
