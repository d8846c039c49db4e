"""Single statements on PostgreSQL without a pool checkout each: a few pooled connections kept borrowed.

asyncpg's `Pool.fetch` borrows a connection and gives it back around every statement: a queue
get, a connection proxy, and a release shielded from cancellation (a task of its own, so more
turns of the event loop). That costs the API process more than the statement's own round trip
(`docs/performance.md`). Here a connection stays borrowed between single statements: taking one
is a list pop and giving it back a list append. At most `most` connections are kept so (half the
pool), so transactions always find the rest; when all those are busy a statement goes through
the pool as before. A statement that fails or is cancelled gives its connection back to the pool
(which waits out a cancellation and replaces a broken connection), and so does one found closed
while kept (or already taken back by the pool, as asyncpg does with a connection it lost). `close` gives every kept connection back before the pool closes.
"""

from __future__ import annotations

from typing import Any

import asyncpg


def _open(connection: Any) -> bool:
    """Whether a kept connection still serves: not closed, and not taken back by the pool
    (asyncpg gives a connection it lost back to the pool itself, its proxy then refusing
    every call; giving it back again does nothing)."""
    try:
        return not connection.is_closed()
    except asyncpg.InterfaceError:
        return False


class StatementConnections:
    """Connections of `pool` kept borrowed for single statements, at most `most` of them."""

    def __init__(self, pool: Any, most: int) -> None:
        self.pool = pool
        self.most = most
        self.idle: list[Any] = []
        self.borrowed = 0
        self.closed = False

    async def _take(self) -> Any | None:
        """A borrowed connection free now (borrowing one more if fewer than `most` are), or
        None when all `most` are busy."""
        while self.idle:
            connection = self.idle.pop()
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
            self.idle.append(connection)
        return rows

    async def close(self) -> None:
        """Give every kept connection back to the pool; statements after this use the pool."""
        self.closed = True
        idle, self.idle = self.idle, []
        for connection in idle:
            await self._give_back(connection)
