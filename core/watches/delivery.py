"""Delivering watch changes: each pending change of a running watch is charged to the
owner's credits, receipted, notified and (with a webhook URL) queued for its signed
POST — all in one transaction, so a change is delivered and charged exactly once.

Deliveries of one watch go in order: the transaction first locks the watch row (an
UPDATE, so PostgreSQL holds the lock until commit and SQLite's writer lock does the
same), then takes the oldest pending change. A change the cap or the credits cannot
pay pauses the watch (`cap` or `credits`) and stays pending; the owner is told once
per pause. Nothing here sends HTTP: the webhook leaves through the outbox after the
commit (core/webhooks).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from tollway._core.basics.events import WATCH_DELIVERIES, EventBus
from tollway._core.basics.ids import now_ms
from tollway._core.basics.money import dollars, usdc
from tollway._core.credits import ledger
from tollway._core.jobs import notifications
from tollway._core.receipts.receipts import ReceiptBook, ReceiptDraft
from tollway._core.storage import sql
from tollway._core.watches.tables import Watch, WatchDelivery
from tollway._core.webhooks import outbox

log = logging.getLogger("tollway.watches")

# A delivery step's statements stay raw: each delivered change runs them once, in the
# transaction bench/history.py's `deliveries_per_s` measures, where the ORM costs a few
# times a named statement per query (docs/storage.md).
# Lock the watch for the step: an UPDATE that changes nothing, so PostgreSQL holds the row
# lock until commit and SQLite takes its writer lock.
LOCK_WATCH = sql.Statement(
    "UPDATE tw_watches SET updated_ms = updated_ms WHERE id = {} "
    "RETURNING id, agent_id, entity_type, attribute, entity_key, max_spend, spent, price_per_change, status, "
    "pause_reason, pause_notified, webhook_url, webhook_secret, deleted_ms"
)
OLDEST_PENDING = sql.Statement(
    "SELECT id, change, seq FROM tw_watch_deliveries WHERE watch_id = {} AND state = 'pending' ORDER BY seq LIMIT 1"
)
# Guarded: only a change still pending becomes delivered.
MARK_DELIVERED = sql.Statement(
    "UPDATE tw_watch_deliveries SET state = 'delivered', receipt_id = {}, charged = {}, delivered_ms = {} "
    "WHERE id = {} AND state = 'pending' RETURNING id"
)
COUNT_DELIVERY = sql.Statement(
    "UPDATE tw_watches SET spent = spent + {}, changes_delivered = changes_delivered + 1, last_delivery_ms = {}, "
    "pause_notified = {}, updated_ms = {} WHERE id = {}"
)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one step did: `delivered` a change, `paused` the watch, or `idle` (nothing to do)."""

    kind: str
    delivery_id: str | None = None
    reason: str | None = None


def _number(micro: int) -> float:
    return float(dollars(micro))


class WatchDeliveries:
    """Delivers pending changes; `deliver_watch` and `run_pending` are safe to run
    concurrently from any number of processes."""

    def __init__(
        self, *, db: Any, receipts: ReceiptBook, events: EventBus, after_commit: Callable[[Outcome], None] | None = None
    ) -> None:
        self.db = db
        self.receipts = receipts
        self.events = events
        # Observers of each committed step (tests use it to kill a process right after a charge).
        self.after_commit = after_commit

    async def run_pending(self, limit: int = 200) -> int:
        """Deliver what running watches have pending; returns how many changes were delivered."""
        runnable = Watch.select(Watch.id).where(Watch.status == "running", Watch.deleted_ms.is_null())
        rows = (
            await WatchDelivery.select(WatchDelivery.watch_id)
            .where(WatchDelivery.state == "pending", WatchDelivery.watch_id.is_in(runnable))
            .distinct()
            .limit(limit)
        )
        delivered = 0
        for row in rows:
            delivered += await self.deliver_watch(row["watch_id"])
        return delivered

    async def deliver_watch(self, watch_id: str, max_steps: int = 1000) -> int:
        """Deliver the watch's pending changes in order until none is left or it pauses."""
        delivered = 0
        for _ in range(max_steps):
            outcome = await self.step(watch_id)
            if outcome.kind != "delivered":
                break
            delivered += 1
        return delivered

    async def step(self, watch_id: str) -> Outcome:
        """One transaction: deliver the watch's oldest pending change, or pause it."""
        async with self.db.transaction():
            watch = await LOCK_WATCH.row(watch_id)
            if watch is None or watch["deleted_ms"] is not None or watch["status"] != "running":
                return Outcome("idle")
            pending = await OLDEST_PENDING.row(watch_id)
            if pending is None:
                return Outcome("idle")
            price = int(watch["price_per_change"])
            if int(watch["spent"]) + price > int(watch["max_spend"]):
                outcome = await self._pause(watch, "cap")
            elif (
                await ledger.debit_credits(
                    watch["agent_id"], price, kind="spend", reference=pending["id"], memo="watch_change"
                )
                is None
            ):
                outcome = await self._pause(watch, "credits")
            else:
                outcome = await self._deliver(watch, pending, price)
        if outcome.kind == "delivered" and watch["webhook_url"]:
            await outbox.publish_due(self.events, outcome.delivery_id or "")
        if self.after_commit is not None:
            self.after_commit(outcome)
        return outcome

    async def _pause(self, watch: Any, reason: str) -> Outcome:
        now = now_ms()
        told = bool(watch["pause_notified"]) and watch["pause_reason"] == reason
        await Watch.update(
            {Watch.status: "paused", Watch.pause_reason: reason, Watch.pause_notified: True, Watch.updated_ms: now}
        ).where(Watch.id == watch["id"])
        if not told:
            why = "its spending cap would be passed" if reason == "cap" else "the credits cannot pay the next change"
            await notifications.notify(
                watch["agent_id"],
                "watch_paused",
                f"Watch on {watch['attribute']} {watch['entity_key']} paused",
                f"The watch paused because {why}; changes are held and delivered when it runs again.",
                {"watchId": watch["id"], "reason": reason, "attribute": watch["attribute"], "key": watch["entity_key"]},
            )
        return Outcome("paused", reason=reason)

    async def _deliver(self, watch: Any, pending: Any, price: int) -> Outcome:
        now = now_ms()
        delivery_id = pending["id"]
        change = msgspec.json.decode(pending["change"])
        receipt = await self.receipts.issue(
            ReceiptDraft(
                agent_id=watch["agent_id"],
                category="data",
                subcategory="watch",
                amount=price,
                status="settled",
                execution_status="completed",
                settlement_tx=None,
                payment_method="credits",
                tool="watch",
                request_id=delivery_id,
                job_id=delivery_id,
                metadata={"watch_id": watch["id"], "change": change},
            )
        )
        moved = await MARK_DELIVERED.row(
            receipt["receipt_id"],
            price,
            now,
            delivery_id,
        )
        if moved is None:  # cannot happen under the watch lock; never charge twice if it does
            raise RuntimeError(f"watch delivery {delivery_id} was delivered concurrently")
        await COUNT_DELIVERY.execute(
            price,
            now,
            False,
            now,
            watch["id"],
        )
        await notifications.notify(
            watch["agent_id"],
            "watch_change",
            f"{watch['attribute']} {watch['entity_key']}: {change['field']} changed",
            None,
            {
                "watchId": watch["id"],
                "deliveryId": delivery_id,
                "receiptId": receipt["receipt_id"],
                "tool": "watch",
                "entityType": watch["entity_type"],
                "attribute": watch["attribute"],
                "key": watch["entity_key"],
                "amount": usdc(price),
                "change": change,
            },
        )
        if watch["webhook_url"]:
            await outbox.enqueue(
                webhook_id=delivery_id,
                kind="watch.change",
                subject=watch["id"],
                url=watch["webhook_url"],
                secret=watch["webhook_secret"] or "",
                now_ms=now,
                body={
                    "type": "watch.change",
                    "delivery_id": delivery_id,
                    "watch_id": watch["id"],
                    "entity_type": watch["entity_type"],
                    "attribute": watch["attribute"],
                    "key": watch["entity_key"],
                    "change": change,
                    "charged": _number(price),
                    "receipt_id": receipt["receipt_id"],
                },
            )
        return Outcome("delivered", delivery_id=delivery_id)


async def wake(events: EventBus, watch_ids: list[str]) -> None:
    """After the commit: tell the delivery loops these watches have changes to deliver."""
    for watch_id in watch_ids:
        await events.publish(WATCH_DELIVERIES, watch_id)


__all__ = ["Outcome", "WatchDeliveries", "wake"]
