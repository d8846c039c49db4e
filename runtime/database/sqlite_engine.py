"""A Piccolo SQLite engine: one writer connection, one reader, and checkpoints off the hot path.

Piccolo's stock SQLiteEngine opens a new aiosqlite connection (and thread) for
every query and lets concurrent transactions race for the file lock. The
embedded default serves every request of one process, so this engine keeps
sqlite3 connections in WAL mode and runs statements inline (a local statement
takes microseconds, less than a thread hop costs, see docs/performance.md):

* the writer: transactions and writes, with an asyncio lock so a transaction has
  it to itself until it ends (SQLite has one writer at a time anyway);
* group commit: a transaction runs inside a savepoint of an outer one. When it
  ends, it releases its savepoint and leaves the outer transaction open; the
  transactions that run before the event loop's next turn (or wait for the
  writer) join it, and the group commits once the writer is free and nobody
  waits for it (or when `GROUP_MAX` have joined). Every member's
  `async with` returns only after that commit; a member that fails rolls back
  to its savepoint alone; a write outside any transaction joins the group as a
  member of one statement. A commit writes each page it changed once to the WAL,
  so the pages concurrent calls share (the newest leaf of each table and index)
  are written once per group instead of once per call;
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
import contextlib
import sqlite3
import threading
from typing import Any

from piccolo.engine.sqlite import (
    SQLiteEngine,
    SQLiteTransaction,
    TransactionType,
    convert_boolean_out,
    convert_int_out,
    dict_factory,
)


def int_out(value: bytes) -> int:
    """Piccolo's INTEGER converter (`int(Decimal(text))`, so `1.0` reads 1), the common case
    first: a column's integer as SQLite hands it over (ASCII digits) goes to `int` directly,
    a fifth of the instructions; anything else (or a refusal) is Piccolo's own."""
    try:
        return int(value)
    except (ValueError, TypeError):
        return convert_int_out(value)  # type: ignore[no-any-return]


def boolean_out(value: bytes) -> bool:
    """Piccolo's BOOLEAN converter (true for `1` alone), without decoding a true one first."""
    return True if value == b"1" else convert_boolean_out(value)  # type: ignore[no-any-return]


# The embedded engine's connections read these declared types on every paid call (a balance,
# a fact head's flag): the same values as Piccolo's converters, registered over them.
sqlite3.register_converter("INTEGER", int_out)
sqlite3.register_converter("BOOLEAN", boolean_out)


class _SharedConnection:
    """Async-looking wrapper over the shared sqlite3 connection (what Piccolo awaits)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, args: Any = ()) -> None:
        self.conn.execute(sql, args)

    async def close(self) -> None:  # the connection outlives a transaction
        return None


GROUP_MAX = 64  # transactions one commit may carry
# the engine of this process with an open group, per database file
_OPEN_GROUPS: dict[str, EmbeddedSQLiteEngine] = {}
# each member runs inside this savepoint of the group's outer transaction
SAVE, UNDO, KEEP = "SAVEPOINT tw_member", "ROLLBACK TO tw_member", "RELEASE tw_member"


class _Group:
    """One open outer transaction and the members that ended inside it."""

    __slots__ = ("members", "committed", "commit_asked", "waiters")

    def __init__(self) -> None:
        self.members = 0
        self.commit_asked = False  # a `_try_commit` is on the event loop's list
        self.committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # one future per member waiting for the commit: a member cancelled while it waits
        # cancels its own, never the group's (what `asyncio.shield` would do, one hop sooner)
        self.waiters: list[asyncio.Future[None]] = []

    def waiter(self) -> asyncio.Future[None]:
        """A future of the group's end for one member to await."""
        waiter = self.committed.get_loop().create_future()
        self.waiters.append(waiter)
        return waiter

    def end(self, error: BaseException | None = None) -> None:
        """The group ended: committed (or rolled back with nothing kept), or lost with `error`;
        every waiting member wakes (and raises `error`)."""
        if error is None:
            self.committed.set_result(None)
        elif not self.committed.done():
            self.committed.set_exception(error)
            self.committed.exception()  # retrieved here: each waiting member re-raises it
        for waiter in self.waiters:
            if not waiter.done():  # not cancelled meanwhile
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)


class _Transaction(SQLiteTransaction):
    async def __aenter__(self) -> SQLiteTransaction:
        if self._parent is not None:  # a nested transaction is its outermost one
            return self._parent
        engine: EmbeddedSQLiteEngine = self.engine  # type: ignore[assignment]
        await engine.take_writer()
        try:
            await engine.open_group()
            conn = engine.raw_connection()
            self.connection = _SharedConnection(conn)
            conn.execute(SAVE)
        except BaseException:
            engine.release_writer()
            raise
        self.context = self.engine.current_transaction.set(self)
        return self

    async def __aexit__(self, exception_type, exception, traceback) -> bool:
        if self._parent:
            return exception is None
        engine: EmbeddedSQLiteEngine = self.engine  # type: ignore[assignment]
        group = engine.group
        assert group is not None
        conn = engine.raw_connection()
        deferred = False
        try:
            if exception is not None:
                conn.execute(UNDO)
                conn.execute(KEEP)
                if group.members == 0:  # nothing of anyone's to keep: end the outer transaction
                    engine.roll_back_group(group)
                # else the others' commit comes when the writer is free (`release_writer`)
            else:
                conn.execute(KEEP)
                group.members += 1
                if group.members < GROUP_MAX:
                    deferred = True  # committed once the writer is free and nobody waits (`release_writer`)
                else:
                    engine.commit_group(group)
        except sqlite3.Error as error:  # SQLite ended the outer transaction itself: the group is lost
            engine.abort_group(group, error)
            raise
        finally:
            self.engine.current_transaction.reset(self.context)
            engine.release_writer()
        if deferred:
            await group.waiter()
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


_ROW_CHANGES = ("INSERT", "UPDATE", "DELETE", "WITH", "REPLACE")


def _changes_rows(query: str) -> bool:
    return query.lstrip()[:7].upper().startswith(_ROW_CHANGES)


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
        self.group: _Group | None = None  # the open outer transaction, if any
        self.queued = 0  # transactions waiting for the writer
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

    async def take_writer(self) -> None:
        """The writer's lock, counted among those waiting for it meanwhile (an open group
        waits for them to join before it commits)."""
        self.queued += 1
        try:
            await self.lock.acquire()
        except BaseException:  # cancelled while waiting: the open group must not wait for it
            self.queued -= 1
            self._ask_commit()
            raise
        self.queued -= 1

    def release_writer(self) -> None:
        """Let go of the writer's lock; an open group with members commits once the writer
        is free and nobody waits for it (the tasks ready now may join it first)."""
        self.lock.release()
        self._ask_commit()

    def _ask_commit(self) -> None:
        group = self.group
        if group is not None and group.members and not group.commit_asked:
            group.commit_asked = True
            asyncio.get_running_loop().call_soon(self._try_commit, group)

    def _try_commit(self, group: _Group) -> None:
        group.commit_asked = False
        if self.group is not group or self.lock.locked() or self.queued:
            return  # ended already, or whoever holds or takes the writer next asks again when done
        with contextlib.suppress(sqlite3.Error):  # the members raise it
            self.commit_group(group)

    async def open_group(self) -> _Group:
        """The open group, or a new one (the writer's lock held). Another engine of this
        process on the same file (a test's second "process") may hold SQLite's write lock in
        its own open group: its commit comes at a later turn of this event loop, so wait
        for it here rather than in sqlite3's busy wait, which would stop the loop."""
        if self.group is not None:
            return self.group
        await self._others_committed()
        self.raw_connection().execute("BEGIN IMMEDIATE")  # the outer transaction of a group writes
        self.group = group = _Group()
        _OPEN_GROUPS[self.path] = self
        return group

    async def _others_committed(self) -> None:
        loop = asyncio.get_running_loop()
        while (other := _OPEN_GROUPS.get(self.path)) is not None and other is not self and other.group is not None:
            if other.group.committed.get_loop() is not loop:  # another thread's: sqlite3's busy wait it is
                return
            with contextlib.suppress(Exception):  # its members see its failure, not us
                await asyncio.shield(other.group.committed)

    def _end(self, group: _Group) -> None:
        if self.group is group:
            self.group = None
        if _OPEN_GROUPS.get(self.path) is self:
            del _OPEN_GROUPS[self.path]

    def roll_back_group(self, group: _Group) -> None:
        """End a group none of whose members kept anything."""
        self._end(group)
        self.raw_connection().execute("ROLLBACK")
        group.end()

    def commit_group(self, group: _Group) -> None:
        """Commit the open outer transaction (the writer's lock held) and wake its members."""
        self._end(group)
        try:
            self.raw_connection().execute("COMMIT")
        except sqlite3.Error as error:
            self.abort_group(group, error)
            raise
        group.end()

    def abort_group(self, group: _Group, error: BaseException) -> None:
        """End `group` without committing: every member that waits for it raises `error`."""
        self._end(group)
        conn = self.raw_connection()
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        group.end(error)

    def _flush_open_group(self) -> None:
        """A statement that must run on its own (DDL, PRAGMA) first commits the open group."""
        if self.group is not None:
            self.commit_group(self.group)

    def reader(self) -> sqlite3.Connection:
        self.raw_connection()
        assert self._reader is not None
        return self._reader

    def close(self) -> None:
        if self.group is not None and self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.commit_group(self.group)
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
        # every row is fetched: the statement is done, and the cursor goes with this frame
        return conn.execute(query, args or ()).fetchall()

    async def _run_in_new_connection(self, query: str, args=None, query_type: str = "generic", table=None):
        if _only_reads(query):
            return self._execute(self.reader(), query, args)
        if not _changes_rows(query):  # DDL, PRAGMA: on its own, after the open group's commit
            async with self.lock:
                self._flush_open_group()
                await self._others_committed()
                return self._execute(self.raw_connection(), query, args)
        return await self._write_in_group(query, args)

    async def _write_in_group(self, query: str, args: Any) -> list[dict]:
        """A write outside any transaction joins the open group as a member of one statement
        (SQLite undoes a failed statement alone) and returns after the group's commit."""
        await self.take_writer()
        try:
            group = await self.open_group()
            conn = self.raw_connection()
            try:
                rows = self._execute(conn, query, args)
            except sqlite3.Error as error:
                if not conn.in_transaction:  # SQLite ended the outer transaction itself
                    self.abort_group(group, error)
                elif group.members == 0:
                    self.roll_back_group(group)
                raise
            group.members += 1
            if group.members >= GROUP_MAX:
                self.commit_group(group)
                return rows
            waiter = group.waiter()
        finally:
            self.release_writer()
        await waiter
        return rows

    async def _run_in_existing_connection(
        self, connection, query: str, args=None, query_type: str = "generic", table=None
    ):
        return self._in_transaction(connection, query, args)

    def _in_transaction(self, connection: Any, query: str, args: Any) -> list[dict]:
        """Run a statement in the open transaction `connection` stands for: on the writer's
        shared connection (a group member's) or on the writer itself."""
        conn = connection.conn if type(connection) is _SharedConnection else self.raw_connection()
        return self._execute(conn, query, args)

    async def run_sql(self, query: str, args: tuple[Any, ...]) -> list[dict]:
        """A compiled statement of the storage kit (`core/storage/sql.py`): in the open
        transaction on the writer, else as `run_querystring` would run it (the reader, the
        open group, or on its own), without Piccolo's query wrapper."""
        current = self.current_transaction.get()
        if current is None:
            return await self._run_in_new_connection(query, args)
        return self._in_transaction(current.connection, query, args)  # no coroutine of its own

    def transaction(self, transaction_type: TransactionType = TransactionType.immediate, allow_nested: bool = True):
        return _Transaction(engine=self, transaction_type=transaction_type, allow_nested=allow_nested)
