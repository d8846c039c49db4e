"""Engine selection, connection lifecycle and migrating the schema on start."""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from piccolo.engine.base import Engine
from piccolo.engine.postgres import PostgresEngine
from piccolo.table import Table

from tollway._core.schema import KERNEL_TABLES
from tollway._core.storage.tables import bind
from tollway._runtime.database.migrations import Migrator, Step, all_apps, plugin_apps
from tollway._runtime.database.sqlite_engine import EmbeddedSQLiteEngine
from tollway._runtime.database.statement_connections import StatementConnections

log = logging.getLogger("tollway.database")


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


async def _keep_session(connection: Any) -> None:
    """What a pooled connection needs on its way back to the pool besides asyncpg's own
    rollback of a transaction left open: nothing. The service keeps no session state on
    pooled connections (LISTEN has its own connection; the migration lock is released
    explicitly; advisory locks are transaction-scoped), so asyncpg's default reset query,
    one more round trip on every statement outside a transaction, is skipped."""
    return None


class _PostgresEngine(PostgresEngine):
    """Piccolo's engine, asking a server its version once per process: every engine made
    connects on its own to check it (a connection, a thread and an event loop each), and
    a process that opens the same server again (a test's kernels, the CLI's commands) got
    the same answer each time."""

    _checked: set[tuple[Any, ...]] = set()
    # The pool's connections kept borrowed for single statements (`Database.connect` sets them).
    statements: StatementConnections | None = None

    async def run_sql(self, query: str, args: tuple[Any, ...]) -> list[Any]:
        """A compiled statement of the storage kit (`core/storage/sql.py`) on asyncpg: on the
        open transaction's connection, else on one of the pool's kept for single statements
        (`statement_connections.py`), else on a pooled one (asyncpg prepares it once per
        connection), as `run_querystring` runs it without Piccolo's query wrapper."""
        current = self.current_transaction.get()
        if current is not None:
            return await current.connection.fetch(query, *args)
        statements = self.statements
        if statements is not None and statements.pool is self.pool:
            return await statements.fetch(query, args)
        if self.pool is not None:
            return await self.pool.fetch(query, *args)
        return await self._run_in_new_connection(query, list(args))

    async def check_version(self) -> None:
        server = (self.config.get("host"), self.config.get("port"), self.config.get("database"))
        if server in self._checked:
            return
        try:
            with warnings.catch_warnings():  # Piccolo warns in colour when the server is down
                warnings.simplefilter("ignore")
                version = await self.get_version()
        except Exception:  # noqa: BLE001 - unreachable now: connecting says so later, in one line
            return
        if not version:  # Piccolo answers 0.0 when it could not connect
            return
        self._checked.add(server)
        if version and version < self.min_version_number:
            log.warning("PostgreSQL %s is older than the %s Piccolo supports", version, self.min_version_number)


DEAD_SESSION_S = 30.0  # TOLLWAY_DB_DEAD_SESSION_S's default
POOL_MAX = 20  # TOLLWAY_DB_POOL_MAX's default: connections one process keeps to PostgreSQL at most


def session_limits(dead_session_s: float) -> dict[str, str]:
    """The server settings that end a session of ours within about `dead_session_s` once its
    process stopped answering (0: none): idle inside a transaction that long, or its TCP
    peer silent to keepalive probes, or its sent data unacknowledged, for about as long."""
    if dead_session_s <= 0:
        return {}
    seconds = max(int(dead_session_s), 4)
    return {
        "idle_in_transaction_session_timeout": str(int(dead_session_s * 1000)),
        "tcp_keepalives_idle": str(max(seconds // 3, 1)),  # then 4 probes: dead after ~seconds
        "tcp_keepalives_interval": str(max(seconds // 6, 1)),
        "tcp_keepalives_count": "4",
        "tcp_user_timeout": str(seconds * 1000),
    }


class Database:
    def __init__(
        self,
        url: str,
        *,
        asynchronous_commit: bool = False,
        dead_session_s: float = DEAD_SESSION_S,
        pool_max: int = POOL_MAX,
    ) -> None:
        """`asynchronous_commit` is for worker-only processes (`tollway worker`):
        everything a worker writes is fenced by the job's attempt and redone by a
        re-run, so a commit lost in a database crash is the same as a worker
        crash, which the lease already recovers from. API processes, which write
        charges, always commit synchronously.

        `dead_session_s` (0: no limit) is how soon PostgreSQL ends a session of ours
        whose process stopped answering, rolling its transaction back
        (`session_limits`). A process cut off from the server in the middle of a
        transaction (its network gone, its machine frozen) would otherwise keep that
        transaction's row locks, the watch's or the agent's balance's, until the
        server's TCP keepalive gave up on it, two hours by default, with every other
        host waiting on those rows meanwhile. A transaction waits on its own
        statements only; one idle this long waiting on anything else (an upstream
        call made inside it) is ended as well.

        `pool_max` caps the connections this process opens to PostgreSQL (its pool; the
        event listener's is one more): every process of a deployment together must stay
        under the server's `max_connections`."""
        self.url = url
        self.asynchronous_commit = asynchronous_commit
        self.dead_session_s = dead_session_s
        self.pool_max = pool_max
        self.kind, self._config = parse_database_url(url)
        self.engine: Engine
        if self.kind == "sqlite":
            os.makedirs(os.path.dirname(os.path.abspath(self._config["path"])), exist_ok=True)
            self.engine = EmbeddedSQLiteEngine(path=self._config["path"])
        else:
            self.engine = _PostgresEngine(config=self._config)
        self._tables: list[type[Table]] = list(KERNEL_TABLES)

    @classmethod
    def from_url(cls, url: str) -> Database:
        return cls(url)

    def add_tables(self, tables: Iterable[type[Table]]) -> None:
        for t in tables:
            if t not in self._tables:
                self._tables.append(t)

    def bind(self) -> None:
        bind(self._tables, self.engine)

    async def connect(self) -> None:
        self.bind()
        if isinstance(self.engine, PostgresEngine):
            settings = {"synchronous_commit": "off"} if self.asynchronous_commit else {}
            settings.update(session_limits(self.dead_session_s))
            await self.engine.start_connection_pool(
                min_size=2, max_size=self.pool_max, server_settings=settings, reset=_keep_session
            )
            self.engine.statements = StatementConnections(self.engine.pool, most=self.pool_max // 2)
        else:
            self.engine.raw_connection()

    async def migrate(self, plugins: Any = None) -> list[Step]:
        """Bring the schema up to date: the kernel's migrations, then those of the
        apps plugins declare (`plugins` is the kernel's plugin manager). Returns
        the migrations this call applied (none when the schema was current)."""
        apps = plugin_apps(plugins) if plugins is not None else []
        for app in apps:
            self.add_tables(app.table_classes)
        self.bind()
        return await Migrator(self.engine, self.kind, all_apps(apps)).migrate()

    async def reachable(self, timeout_s: float) -> None:
        """Raise unless the database answers within `timeout_s` (one connection of its own,
        closed at once; the embedded file needs no server)."""
        if self.kind != "postgres":
            return
        import asyncpg

        connection = await asyncpg.connect(**self._config, timeout=timeout_s)
        await connection.close()

    async def pending(self, plugins: Any = None) -> list[Step]:
        """The migrations `migrate` would apply now (`tollway doctor` reports them)."""
        apps = plugin_apps(plugins) if plugins is not None else []
        return await Migrator(self.engine, self.kind, all_apps(apps)).pending()

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
            statements, self.engine.statements = self.engine.statements, None
            if statements is not None:
                await statements.close()
            try:
                await asyncio.wait_for(pool.close(), grace_s)
            except TimeoutError:
                log.warning("database pool did not close within %s s; terminating its connections", grace_s)
                pool.terminate()
            self.engine.pool = None
        else:
            self.engine.close()

    def event_bus(self):
        """LISTEN/NOTIFY across processes on PostgreSQL; in-process on SQLite."""
        if self.kind == "postgres":
            from tollway._runtime.database.pg_events import PostgresEventBus

            return PostgresEventBus(self._config, self.engine)
        from tollway._core.basics.events import LocalEventBus

        return LocalEventBus()

    def transaction(self):
        return self.engine.transaction()
