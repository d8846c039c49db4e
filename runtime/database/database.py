"""Engine selection, connection lifecycle and table creation."""
from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from urllib.parse import urlparse

from piccolo.engine.base import Engine
from piccolo.engine.postgres import PostgresEngine
from piccolo.table import Table, create_db_tables

from core.idempotency import IDEMPOTENCY_TABLES
from core.ratelimits import RATE_LIMIT_TABLES
from core.tables import KERNEL_TABLES

from .sqlite_engine import EmbeddedSQLiteEngine


log = logging.getLogger("tollway.database")

SCHEMA_LOCK = 0x746F6C6C  # "toll": the advisory lock key serialising schema creation


def parse_database_url(url: str) -> tuple[str, dict]:
    """`sqlite:///path` -> ("sqlite", {path}); `postgres://u@h:p/db` -> ("postgres", asyncpg config)."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        path = url[len("sqlite://") :]
        if path.startswith("/") and not path.startswith("//"):
            path = path  # sqlite:///abs/path -> /abs/path
        return "sqlite", {"path": path}
    if parsed.scheme in ("postgres", "postgresql"):
        config = {
            "host": parsed.hostname or "127.0.0.1",
            "port": parsed.port or 5432,
            "user": parsed.username or "postgres",
            "database": (parsed.path or "/postgres").lstrip("/") or "postgres",
        }
        if parsed.password:
            config["password"] = parsed.password
        return "postgres", config
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///path or postgres://...")


# Tables whose rows may be lost in a PostgreSQL crash without harm: rate-limit
# counters (a window restarts from zero). UNLOGGED skips the WAL and its fsync
# on the one row every request of an agent updates.
UNLOGGED_TABLES = ("tw_rate_counters",)


class Database:
    def __init__(self, url: str, *, asynchronous_commit: bool = False) -> None:
        """`asynchronous_commit` is for worker-only processes (`tollway worker`):
        everything a worker writes is fenced by the job's attempt and redone by a
        re-run, so a commit lost in a database crash is the same as a worker
        crash, which the lease already recovers from. API processes, which write
        charges, always commit synchronously."""
        self.url = url
        self.asynchronous_commit = asynchronous_commit
        self.kind, self._config = parse_database_url(url)
        self.engine: Engine
        if self.kind == "sqlite":
            os.makedirs(os.path.dirname(os.path.abspath(self._config["path"])), exist_ok=True)
            self.engine = EmbeddedSQLiteEngine(path=self._config["path"])
        else:
            self.engine = PostgresEngine(config=self._config)
        self._tables: list[type[Table]] = [*KERNEL_TABLES, *RATE_LIMIT_TABLES, *IDEMPOTENCY_TABLES]

    @classmethod
    def from_url(cls, url: str) -> "Database":
        return cls(url)

    def add_tables(self, tables: Iterable[type[Table]]) -> None:
        for t in tables:
            if t not in self._tables:
                self._tables.append(t)

    def bind(self) -> None:
        for table in self._tables:
            table._meta.db = self.engine

    async def connect(self) -> None:
        self.bind()
        if isinstance(self.engine, PostgresEngine):
            settings = {"synchronous_commit": "off"} if self.asynchronous_commit else {}
            await self.engine.start_connection_pool(min_size=2, max_size=20, server_settings=settings)
        else:
            self.engine.raw_connection()

    async def create_tables(self) -> None:
        """Create the tables (with their indexes) that do not exist yet.

        Only missing tables are touched: `CREATE INDEX IF NOT EXISTS` locks its
        table even when the index exists, and a process starting beside running
        workers would deadlock with their transactions. On PostgreSQL processes
        that start together take turns under an advisory lock.
        """
        self.bind()
        if self.kind == "postgres":
            if not await self._missing_tables():
                return
            async with self.engine.transaction():
                await self.engine.run_ddl(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
                missing = await self._missing_tables()
                if missing:
                    await create_db_tables(*missing, if_not_exists=True)
                    for table in missing:
                        if table._meta.tablename in UNLOGGED_TABLES:
                            await self.engine.run_ddl(f"ALTER TABLE {table._meta.tablename} SET UNLOGGED")
        else:
            missing = await self._missing_tables()
            if missing:
                await create_db_tables(*missing, if_not_exists=True)

    async def _missing_tables(self) -> list[type[Table]]:
        if self.kind == "postgres":
            rows = await self.engine.run_ddl("SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()")
        else:
            rows = await self.engine.run_ddl("SELECT name FROM sqlite_master WHERE type = 'table'")
        existing = {r["name"] for r in rows}
        return [t for t in self._tables if t._meta.tablename not in existing]

    async def truncate_all(self) -> None:
        """Empty every table (tests reuse one PostgreSQL database per run)."""
        for table in self._tables:
            await table.delete(force=True)

    async def close(self, *, grace_s: float = 10.0) -> None:
        """Close the connections. asyncpg's graceful close waits for every borrowed
        connection to come back, forever if one never does (a task cancelled
        mid-query): after `grace_s` the pool is terminated instead, so a process
        or a test always gets past its shutdown."""
        if isinstance(self.engine, PostgresEngine):
            pool = self.engine.pool
            if pool is None:
                return
            try:
                await asyncio.wait_for(pool.close(), grace_s)
            except asyncio.TimeoutError:
                log.warning("database pool did not close within %s s; terminating its connections", grace_s)
                pool.terminate()
            self.engine.pool = None
        else:
            self.engine.close()

    def event_bus(self):
        """LISTEN/NOTIFY across processes on PostgreSQL; in-process on SQLite."""
        if self.kind == "postgres":
            from .pg_events import PostgresEventBus

            return PostgresEventBus(self._config, self.engine)
        from core.events import LocalEventBus

        return LocalEventBus()

    def transaction(self):
        return self.engine.transaction()
