"""Events between processes: job wake-ups for workers and job updates for push
subscribers. The kernel publishes; the runtime picks the bus: in-process on
SQLite (one process), PostgreSQL LISTEN/NOTIFY when several processes share one
database (runtime/database/pg_events.py)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import Protocol

JOBS_NEW = "tollway_jobs_new"  # payload: request id of a job ready to run
JOB_UPDATES = "tollway_job_updates"  # payload: "<request id> <status>"
WATCH_DELIVERIES = "tollway_watch_deliveries"  # payload: a watch id with changes to deliver (or "")
WEBHOOKS_DUE = "tollway_webhooks_due"  # payload: a webhook id ready to send (or "")

Callback = Callable[[str], None]


class EventBus(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def publish(self, channel: str, payload: str) -> None: ...

    def subscribe(self, channel: str, callback: Callback) -> Callable[[], None]:
        """Call `callback(payload)` for each event; returns the unsubscribe function."""

    def notify_sql(self, channel: str, payload_sql: str) -> str | None:
        """An SQL expression that publishes `payload_sql` when its statement's
        transaction commits, to ride along in a RETURNING list and save a round
        trip; None when this bus cannot (then the caller publishes)."""


class LocalEventBus:
    """One process: callbacks run on the event loop soon after `publish`."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[Callback]] = defaultdict(list)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self._subscribers.clear()

    async def publish(self, channel: str, payload: str) -> None:
        loop = asyncio.get_running_loop()
        for callback in list(self._subscribers.get(channel, ())):
            loop.call_soon(callback, payload)

    def notify_sql(self, channel: str, payload_sql: str) -> str | None:
        return None

    def subscribe(self, channel: str, callback: Callback) -> Callable[[], None]:
        self._subscribers[channel].append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers.get(channel, []):
                self._subscribers[channel].remove(callback)

        return unsubscribe


async def publish_unless_in_sql(bus: EventBus, channel: str, payload: str) -> None:
    """Publish `payload`, unless `bus` publishes from SQL: then the write already did, at commit (see `jobs.publishes_in_sql`)."""
    if bus.notify_sql(channel, "''") is None:
        await bus.publish(channel, payload)
