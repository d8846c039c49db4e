"""A Piccolo SQLite engine with one shared connection and serialised transactions.

Piccolo's stock SQLiteEngine opens a new aiosqlite connection (and thread) for
every query and lets concurrent transactions race for the file lock. The
embedded default serves every request of one process, so this engine keeps one
sqlite3 connection in WAL mode and runs statements inline (a local SQLite
statement takes microseconds, far less than a thread hop), with an asyncio lock
so a transaction has the connection to itself until it commits. Another process
on the same file (`tollway mcp` beside `tollway serve`) waits on busy_timeout.
"""
from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from piccolo.engine.sqlite import SQLiteEngine, SQLiteTransaction, TransactionType, dict_factory


class _SharedConnection:
    """Async-looking wrapper over the shared sqlite3 connection (what Piccolo awaits)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, args: Any = ()) -> None:
        self.conn.execute(sql, args)

    async def close(self) -> None:  # the connection outlives a transaction
        return None


class _Transaction(SQLiteTransaction):
    async def __aenter__(self) -> "_Transaction":
        if self._parent is not None:
            return self._parent
        engine: EmbeddedSQLiteEngine = self.engine  # type: ignore[assignment]
        await engine.lock.acquire()
        try:
            self.connection = _SharedConnection(engine.raw_connection())
            await self.begin()
        except BaseException:
            engine.lock.release()
            raise
        self.context = self.engine.current_transaction.set(self)
        return self

    async def __aexit__(self, exception_type, exception, traceback) -> bool:
        if self._parent:
            return exception is None
        engine: EmbeddedSQLiteEngine = self.engine  # type: ignore[assignment]
        try:
            if exception:
                if not self._rolled_back:
                    await self.rollback()
            elif not self._committed and not self._rolled_back:
                await self.commit()
        finally:
            self.engine.current_transaction.reset(self.context)
            engine.lock.release()
        return exception is None


class EmbeddedSQLiteEngine(SQLiteEngine):
    def __init__(self, path: str, **kwargs: Any) -> None:
        super().__init__(path=path, **kwargs)
        self.lock = asyncio.Lock()
        self._conn: sqlite3.Connection | None = None

    def raw_connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self.path,
                detect_types=self.connection_kwargs.get("detect_types", 0),
                isolation_level=None,
                check_same_thread=False,
            )
            conn.row_factory = dict_factory
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _execute(self, conn: sqlite3.Connection, query: str, args: list[Any] | None) -> list[dict]:
        cursor = conn.execute(query, args or [])
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    async def _run_in_new_connection(self, query: str, args=None, query_type: str = "generic", table=None):
        async with self.lock:
            return self._execute(self.raw_connection(), query, args)

    async def _run_in_existing_connection(self, connection, query: str, args=None, query_type: str = "generic", table=None):
        conn = connection.conn if isinstance(connection, _SharedConnection) else self.raw_connection()
        return self._execute(conn, query, args)

    def transaction(self, transaction_type: TransactionType = TransactionType.immediate, allow_nested: bool = True):
        return _Transaction(engine=self, transaction_type=transaction_type, allow_nested=allow_nested)
