"""A Piccolo SQLite engine: one writer connection, one reader, and checkpoints off the hot path.

Piccolo's stock SQLiteEngine opens a new aiosqlite connection (and thread) for
every query and lets concurrent transactions race for the file lock. The
embedded default serves every request of one process, so this engine keeps
sqlite3 connections in WAL mode and runs statements inline (a local statement
takes microseconds, less than a thread hop costs, see docs/performance.md):

* the writer: transactions and writes, with an asyncio lock so a transaction has
  it to itself until it commits (SQLite has one writer at a time anyway);
* the reader: a statement that only reads, outside any transaction, runs on its
  own connection and never waits for the writer's lock: WAL gives it the last
  committed state while a transaction is open;
* the checkpointer: the writer never checkpoints in a commit (where it would
  copy pages and fsync on a request's time); a thread with its own connection
  moves the WAL into the database file every `checkpoint_every_s`, while
  requests go on (sqlite3 lets go of the GIL while it does).

Another process on the same file (`tollway mcp` beside `tollway serve`) waits on
busy_timeout.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
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
    async def __aenter__(self) -> SQLiteTransaction:
        if self._parent is not None:  # a nested transaction is its outermost one
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


def _connect(path: str, detect_types: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, detect_types=detect_types, isolation_level=None, check_same_thread=False)
    conn.row_factory = dict_factory
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def _only_reads(query: str) -> bool:
    return query.lstrip()[:6].upper() == "SELECT"


class Checkpointer(threading.Thread):
    """Moves the WAL into the database file every `every_s` seconds, on its own connection."""

    def __init__(self, path: str, every_s: float) -> None:
        super().__init__(name="tollway-sqlite-checkpoint", daemon=True)
        self.path = path
        self.every_s = every_s
        self.stopping = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        try:
            while not self.stopping.wait(self.every_s):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:  # busy or closing: the next round does it
                    pass
        finally:
            conn.close()


class EmbeddedSQLiteEngine(SQLiteEngine):
    def __init__(self, path: str, *, checkpoint_every_s: float = 1.0, **kwargs: Any) -> None:
        super().__init__(path=path, **kwargs)
        self.lock = asyncio.Lock()
        self.checkpoint_every_s = checkpoint_every_s
        self._conn: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._checkpointer: Checkpointer | None = None

    def raw_connection(self) -> sqlite3.Connection:
        """The writer (opened, with the reader and the checkpointer, on first use)."""
        if self._conn is None:
            detect = self.connection_kwargs.get("detect_types", 0)
            conn = _connect(self.path, detect)
            conn.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer does it
            self._conn = conn
            self._reader = _connect(self.path, detect)
            self._checkpointer = Checkpointer(self.path, self.checkpoint_every_s)
            self._checkpointer.start()
        return self._conn

    def reader(self) -> sqlite3.Connection:
        self.raw_connection()
        assert self._reader is not None
        return self._reader

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stopping.set()
            self._checkpointer.join()
            self._checkpointer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._conn is not None:
            try:  # leave the file whole for whoever opens it next
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:
                pass
            self._conn.close()
            self._conn = None

    def _execute(self, conn: sqlite3.Connection, query: str, args: list[Any] | None) -> list[dict]:
        cursor = conn.execute(query, args or [])
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    async def _run_in_new_connection(self, query: str, args=None, query_type: str = "generic", table=None):
        if _only_reads(query):
            return self._execute(self.reader(), query, args)
        async with self.lock:
            return self._execute(self.raw_connection(), query, args)

    async def _run_in_existing_connection(
        self, connection, query: str, args=None, query_type: str = "generic", table=None
    ):
        conn = connection.conn if isinstance(connection, _SharedConnection) else self.raw_connection()
        return self._execute(conn, query, args)

    def transaction(self, transaction_type: TransactionType = TransactionType.immediate, allow_nested: bool = True):
        return _Transaction(engine=self, transaction_type=transaction_type, allow_nested=allow_nested)
