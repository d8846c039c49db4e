"""Single statements on PostgreSQL without a pool checkout each: a few pooled connections kept borrowed.

asyncpg's `Pool.fetch` borrows a connection and gives it back around every statement: a queue
get, a connection proxy, and a release shielded from cancellation (a task of its own, so more
turns of the event loop). That costs the API process more than the statement's own round trip
(`docs/performance.md`). Here a connection stays borrowed between single statements: taking one
is a list pop and giving it back a list append. At most `most` connections are kept so (half the
pool), so transactions always find the rest; when all those are busy a statement goes through
the pool as before. A statement that fails or is cancelled gives its connection back to the pool
(which waits out a cancellation and replaces a broken connection), and so does one found closed
while kept (or already taken back by the pool, as asyncpg does with a connection it lost). A
connection kept idle for `idle_s` seconds goes back to the pool (whose own idle lifetime then
closes it), so a burst does not leave half the pool borrowed for good. `close` gives every kept
connection back before the pool closes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

IDLE_S = 60.0  # how long a kept connection may wait unused before it goes back to the pool


def _open(connection: Any) -> bool:
    """Whether a kept connection still serves: not closed, and not taken back by the pool
    (asyncpg gives a connection it lost back to the pool itself, its proxy then refusing
    every call; giving it back again does nothing)."""
    try:
        return not connection.is_closed()
    except asyncpg.InterfaceError:
        return False


class StatementConnections:
    """Connections of `pool` kept borrowed for single statements, at most `most` of them, each
    given back once it has waited `idle_s` seconds unused."""

    def __init__(self, pool: Any, most: int, idle_s: float = IDLE_S) -> None:
        self.pool = pool
        self.most = most
        self.idle_s = idle_s
        self.idle: list[tuple[Any, float]] = []  # (connection, loop time it was kept at), oldest first
        self.borrowed = 0
        self.closed = False
        self._sweep: asyncio.TimerHandle | None = None
        self._sweeps: set[asyncio.Task[None]] = set()

    async def _take(self) -> Any | None:
        """A borrowed connection free now (the one kept last; borrowing one more if fewer than
        `most` are), or None when all `most` are busy."""
        while self.idle:
            connection = self.idle.pop()[0]
            if _open(connection):
                return connection
            await self._give_back(connection)
        if self.closed or self.borrowed >= self.most:
            return None
        self.borrowed += 1
        try:
            return await self.pool.acquire()
        except BaseException:
            self.borrowed -= 1
            raise

    async def _give_back(self, connection: Any) -> None:
        self.borrowed -= 1
        await self.pool.release(connection)

    async def fetch(self, query: str, args: tuple[Any, ...]) -> list[Any]:
        """Run one statement outside any transaction; its rows."""
        connection = await self._take()
        if connection is None:
            return await self.pool.fetch(query, *args)
        try:
            rows = await connection.fetch(query, *args)
        except BaseException:
            await self._give_back(connection)
            raise
        if self.closed:
            await self._give_back(connection)
        else:
            loop = asyncio.get_running_loop()
            self.idle.append((connection, loop.time()))
            if self._sweep is None:
                self._sweep = loop.call_later(self.idle_s, self._sweep_due)
        return rows

    def _sweep_due(self) -> None:
        self._sweep = None
        task = asyncio.ensure_future(self._give_back_unused())
        self._sweeps.add(task)
        task.add_done_callback(self._sweeps.discard)

    async def _give_back_unused(self) -> None:
        """Give back the connections kept unused for `idle_s` or longer; look again when the
        oldest of the rest will have waited that long."""
        loop = asyncio.get_running_loop()
        due = loop.time() - self.idle_s
        unused = [connection for connection, kept_at in self.idle if kept_at <= due]
        self.idle = [entry for entry in self.idle if entry[1] > due]
        for connection in unused:
            await self._give_back(connection)
        if self.idle and not self.closed and self._sweep is None:
            self._sweep = loop.call_later(self.idle[0][1] + self.idle_s - loop.time(), self._sweep_due)

    async def close(self) -> None:
        """Give every kept connection back to the pool; statements after this use the pool."""
        self.closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        idle, self.idle = self.idle, []
        for connection, _ in idle:
            await self._give_back(connection)
        for task in list(self._sweeps):
            await task
