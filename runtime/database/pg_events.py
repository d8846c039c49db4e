"""PostgreSQL LISTEN/NOTIFY event bus: every API and worker process sharing the
database sees every job event, so a WebSocket subscriber connected to any API
process is pushed updates of jobs run by any worker."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import asyncpg

log = logging.getLogger("tollway.events")


class PostgresEventBus:
    def __init__(self, config: dict[str, Any], engine: Any) -> None:
        self._config = config
        self._engine = engine  # publishes through the Piccolo engine's pool
        self._conn: asyncpg.Connection | None = None
        self._subscribers: dict[str, list[Callable[[str], None]]] = defaultdict(list)
        self._listening: set[str] = set()
        self._lock = asyncio.Lock()  # one operation at a time on the LISTEN connection
        self._pending: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        async with self._lock:
            if self._conn is None:
                self._conn = await asyncpg.connect(**self._config)
                for channel in list(self._subscribers):
                    await self._listen(channel)

    async def stop(self) -> None:
        async with self._lock:
            if self._conn is not None:
                try:
                    await asyncio.wait_for(self._conn.close(), 5)
                except (TimeoutError, OSError):
                    self._conn.terminate()
                self._conn = None
            self._listening.clear()

    async def _listen(self, channel: str) -> None:
        if self._conn is not None and channel not in self._listening:
            await self._conn.add_listener(channel, self._dispatch)
            self._listening.add(channel)

    async def _listen_locked(self, channel: str) -> None:
        """LISTEN for a channel subscribed after start: two subscriptions made
        back to back must not run their LISTENs on the connection at once."""
        async with self._lock:
            await self._listen(channel)

    def _dispatch(self, _conn: Any, _pid: int, channel: str, payload: str) -> None:
        for callback in list(self._subscribers.get(channel, ())):
            try:
                callback(payload)
            except Exception:  # a subscriber's bug must not stop the others
                log.exception("event subscriber failed")

    async def publish(self, channel: str, payload: str) -> None:
        from tollway._core.storage import sql

        await sql.fetch("SELECT pg_notify({}, {})", channel, payload)

    def notify_sql(self, channel: str, payload_sql: str) -> str | None:
        if not channel.replace("_", "").isalnum():
            raise ValueError(f"bad channel name {channel!r}")
        return f"pg_notify('{channel}', {payload_sql})"

    def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], None]:
        self._subscribers[channel].append(callback)
        if self._conn is not None and channel not in self._listening:
            task = asyncio.get_running_loop().create_task(self._listen_locked(channel))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

        def unsubscribe() -> None:
            if callback in self._subscribers.get(channel, []):
                self._subscribers[channel].remove(callback)

        return unsubscribe
