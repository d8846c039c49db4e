"""Polling watch sources: read a source's current values, record each entity whose
value or listing changed as a fact (the source's history, read by Changes), and queue
the Change rows of watched entities for delivery — the fact and its deliveries in
one transaction, so a change is never recorded without being queued.

The first poll of a source records what it lists and reports no change; an entity
appearing later is `$entity` listed; with a complete snapshot, an entity missing is
`$entity` not listed. Concurrent pollers are safe: the fact store's compare-and-set
lets one of them record each change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.events import WATCH_DELIVERIES, EventBus
from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.request import CallRequest
from tollway._core.history.store import PUBLIC, NewFact, canonical, write
from tollway._core.history.tables import FactHead, FactRecord
from tollway._core.plugin_api.periodic import PeriodicTask
from tollway._core.watches.queue import change_rows, queue_changes
from tollway._core.watches.sources import Snapshot, WatchSource
from tollway._core.watches.tables import Watch
from tollway._core.wire.watches import WatchSourcePolled

BATCH = 200  # entities per transaction
CHUNK = 500  # keys per IN (...) read


@dataclasses.dataclass(frozen=True)
class PollReport:
    attribute: str
    polled_at: str
    changes_detected: int


class WatchPolling:
    """Polls the registered sources (`poll(attribute)`), for the scheduler and the operator route."""

    def __init__(
        self, *, db: Any, sources: Mapping[str, WatchSource], events: EventBus, services: Callable[[], Any], auth: Any
    ) -> None:
        self.db = db
        self.auth = auth
        self.sources = sources
        self.events = events
        self.services = services

    async def poll_request(self, req: CallRequest, attribute: str) -> WatchSourcePolled:
        """The operator route: one poll of `attribute` now, answered once its changes are
        recorded and queued."""
        self.auth.require_operator(req)
        if attribute not in self.sources:
            known = ", ".join(sorted(self.sources)) or "none"
            raise ServiceError(404, "not_found", f"No watch source {attribute!r}; the sources are: {known}.")
        report = await self.poll(attribute)
        return WatchSourcePolled(
            attribute=report.attribute, polled_at=report.polled_at, changes_detected=report.changes_detected
        )

    async def poll(self, attribute: str) -> PollReport:
        source = self.sources[attribute]
        watched = [
            r["entity_key"]
            for r in await Watch.select(Watch.entity_key)
            .where(Watch.attribute == attribute, Watch.deleted_ms.is_null())
            .distinct()
        ]
        snapshot = await source.poll(self.services(), watched)
        return await self.record(source, snapshot)

    async def record(self, source: WatchSource, snapshot: Snapshot) -> PollReport:
        """Record one snapshot of `source` and queue its watched changes."""
        started = now_ms()
        heads = {
            r["entity_key"]: (r["value_hash"], bool(r["listed"]))
            for r in await FactHead.select(FactHead.entity_key, FactHead.value_hash, FactHead.listed).where(
                FactHead.attribute == source.attribute, FactHead.source == source.source, FactHead.owner == PUBLIC
            )
        }
        first_poll = not heads
        todo: list[tuple[str, Any, str | None, bool]] = []  # key, value, as_of, listed
        for key, observed in snapshot.values.items():
            head = heads.get(key)
            if head is None or not head[1] or head[0] != canonical(observed.value)[1]:
                todo.append((key, observed.value, observed.as_of, True))
        if snapshot.complete:
            todo.extend(
                (key, None, None, False) for key, (_, listed) in heads.items() if listed and key not in snapshot.values
            )
        detected = 0
        woken: set[str] = set()
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            previous = await self._previous(source, [key for key, *_ in batch])
            async with self.db.transaction():
                for key, value, as_of, listed in batch:
                    fact = await write(
                        attribute=source.attribute,
                        entity_key=key,
                        source=source.source,
                        owner=PUBLIC,
                        value=value,
                        as_of=as_of,
                        now=started,
                        recorded_by=None,
                        listed=listed,
                    )
                    if fact is None:  # another poller recorded it first
                        continue
                    rows = self._rows(previous.get(key), fact, first_poll or not snapshot.complete)
                    detected += len(rows)
                    if rows and await queue_changes(fact, rows):
                        woken.add(key)
        if woken:
            await self.events.publish(WATCH_DELIVERIES, "")
        return PollReport(source.attribute, iso(started), detected)

    def _rows(self, previous: Any | None, fact: NewFact, first_sight: bool) -> list[dict[str, Any]]:
        if previous is None:
            # Never seen. In a complete snapshot after the first, the entity appeared; in the
            # first, or in a partial one (only the entities asked about), it is merely first seen.
            return [] if first_sight else change_rows({"listed": False, "value": "null"}, fact)
        return change_rows(previous, fact)

    async def _previous(self, source: WatchSource, keys: list[str]) -> dict[str, Any]:
        """The current fact rows (value, listed) of these entities."""
        out: dict[str, Any] = {}
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            heads = await FactHead.select(FactHead.entity_key, FactHead.fact_id).where(
                FactHead.attribute == source.attribute,
                FactHead.source == source.source,
                FactHead.owner == PUBLIC,
                FactHead.entity_key.is_in(chunk),
            )
            if not heads:
                continue
            facts = {
                int(r["id"]): r
                for r in await FactRecord.select(FactRecord.id, FactRecord.value, FactRecord.listed).where(
                    FactRecord.id.is_in([int(h["fact_id"]) for h in heads])
                )
            }
            for h in heads:
                fact = facts.get(int(h["fact_id"]))
                if fact is not None:
                    out[h["entity_key"]] = {"value": fact["value"], "listed": fact["listed"]}
        return out


def watch_poll_tasks(polling: WatchPolling, interval_s: float) -> list[PeriodicTask]:
    """One periodic task per registered source (TOLLWAY_WATCH_POLL_INTERVAL_S)."""

    def task(attribute: str) -> PeriodicTask:
        async def run(_services: Any) -> None:
            await polling.poll(attribute)

        return PeriodicTask(name=f"watch_poll_{attribute}", interval_s=interval_s, run=run)

    return [task(attribute) for attribute in polling.sources]


__all__ = ["PollReport", "WatchPolling", "watch_poll_tasks"]
