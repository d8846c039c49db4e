"""Forward-only schema migrations: Piccolo apps (one per owner of tables), each
migration applied once, in ID order, and recorded in Piccolo's `migration` table.

The kernel's apps come first, one per area that owns tables, then the apps plugins
declare with the `register_migrations` hook, in the order they were registered. A
migration runs in one transaction with the row that records it, so a crash leaves it
either applied and recorded or neither. On PostgreSQL the processes that start
together take turns under an advisory lock; on SQLite the write lock of each
migration's transaction does the same, and the migration is skipped if another
process recorded it first.

An app's first migration adopts the tables it would create that are already there
(with their rows), and creates only the missing ones. That is how a database made
before the areas owned their tables moves over: the frozen migrations of those
releases (app `kernel`) first bring it to their last schema, then each area adopts
its tables. A new database never runs the frozen ones.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.apps.migrations.tables import Migration
from piccolo.conf.apps import ENVIRONMENT_VARIABLE, AppConfig
from piccolo.table import Table, create_table_class

from tollway._core.schema import KERNEL_APPS, LEGACY_APP
from tollway._core.storage.kernel_history import LEGACY_MARKER_TABLE
from tollway._runtime.database import piccolo_conf

log = logging.getLogger("tollway.migrations")

SCHEMA_LOCK = 0x746F6C6C  # "toll": the advisory lock key serialising schema changes
MIGRATION_TABLE = "migration"  # Piccolo's name, so Piccolo's own CLI reads the same records
_CONF_MODULE = piccolo_conf.__name__


class MigrationError(RuntimeError):
    """A migration app or folder that cannot be applied as declared."""


@dataclass(frozen=True)
class Step:
    app: str
    id: str
    module: ModuleType
    first: bool  # the app's first migration: it adopts tables that already exist

    def __str__(self) -> str:
        description = getattr(self.module, "DESCRIPTION", "") or ""
        return f"{self.app} {self.id}" + (f" ({description})" if description else "")


def plugin_apps(plugins: Any) -> list[AppConfig]:
    """The apps plugins declare through the `register_migrations` hook (`plugins`
    is the kernel's plugin manager)."""
    apps: list[AppConfig] = []

    def register(app: AppConfig) -> None:
        if not isinstance(app, AppConfig):
            raise MigrationError(f"register_migrations received {app!r}, not a Piccolo AppConfig")
        apps.append(app)

    plugins.hook.register_migrations(register=register)
    return apps


def all_apps(extra: Iterable[AppConfig] = ()) -> list[AppConfig]:
    """The legacy app, the kernel's area apps, then `extra` (the plugins' apps)."""
    apps = [LEGACY_APP, *KERNEL_APPS, *extra]
    names = [a.app_name for a in apps]
    for name in names:
        if names.count(name) > 1:
            raise MigrationError(f"two migration apps are named {name!r}: each owner of tables needs a name of its own")
    return apps


_LOADED: dict[str, ModuleType] = {}


def _load(app_name: str, path: Path) -> ModuleType:
    """Import one migration file under a private module name (no sys.path change)."""
    key = str(path.resolve())
    if key not in _LOADED:
        spec = importlib.util.spec_from_file_location(f"_tollway_migrations.{app_name}.{path.stem}", path)
        if spec is None or spec.loader is None:
            raise MigrationError(f"cannot import migration {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[key] = module
    return _LOADED[key]


def load_steps(app: AppConfig) -> list[Step]:
    """The app's migrations in ID order (files without an `ID` are helpers, as in Piccolo)."""
    folder = Path(app.resolved_migrations_folder_path)
    if not folder.is_dir():
        raise MigrationError(f"migration folder {folder} of app {app.app_name!r} does not exist")
    by_id: dict[str, ModuleType] = {}
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = _load(app.app_name, path)
        migration_id = getattr(module, "ID", None)
        if not migration_id:
            continue
        if migration_id in by_id:
            raise MigrationError(f"app {app.app_name!r} has two migrations with ID {migration_id!r}")
        by_id[migration_id] = module
    return [Step(app.app_name, mid, by_id[mid], n == 0) for n, mid in enumerate(sorted(by_id))]


def _without_existing(manager: MigrationManager, existing: set[str]) -> list[str]:
    """Drop from a first migration the tables that already exist; returns their names."""
    adopted = [t.tablename for t in manager.add_tables if t.tablename in existing]
    if adopted:
        manager.add_tables = [t for t in manager.add_tables if t.tablename not in existing]
        manager.add_columns.add_columns = [c for c in manager.add_columns.add_columns if c.tablename not in existing]
    return adopted


class Migrator:
    """Applies the pending migrations of `apps` to one connected engine."""

    def __init__(self, engine: Any, kind: str, apps: Sequence[AppConfig]) -> None:
        self.engine = engine
        self.kind = kind
        self.steps = [step for app in apps for step in load_steps(app)]
        # Piccolo's own record table, bound to this engine (never to a global one)
        self.record: type[Table] = create_table_class(
            "Migration", bases=(Migration,), class_kwargs={"tablename": MIGRATION_TABLE, "db": engine}
        )

    async def applied(self) -> set[tuple[str, str]]:
        """(app, migration id) of every migration recorded in this database."""
        if not await self.record.table_exists():
            return set()
        rows = await self.record.select(self.record.app_name, self.record.name)
        return {(r["app_name"], r["name"]) for r in rows}

    async def pending(self) -> list[Step]:
        done = await self.applied()
        legacy = await self._replays_legacy(done)
        return [s for s in self.steps if (s.app, s.id) not in done and (legacy or s.app != LEGACY_APP.app_name)]

    async def _replays_legacy(self, done: set[tuple[str, str]]) -> bool:
        """Whether this database was made by a release before the areas owned their
        tables: it records a legacy migration, or it has the kernel's tables and
        records no migration of an area app (made before migrations existed)."""
        if any(app == LEGACY_APP.app_name for app, _ in done):
            return True
        areas = {app.app_name for app in KERNEL_APPS}
        return not any(app in areas for app, _ in done) and LEGACY_MARKER_TABLE in await self._tables()

    async def migrate(self) -> list[Step]:
        """Apply what is pending, in order; returns the steps this call applied."""
        if not await self.pending():  # the usual start: nothing to do, no lock, no DDL
            return []
        applied: list[Step] = []
        async with self._lock():
            await self.record.create_table(if_not_exists=True)
            for step in await self.pending():
                if await self._apply(step):
                    applied.append(step)
        return applied

    @contextlib.asynccontextmanager
    async def _lock(self) -> AsyncIterator[None]:
        if self.kind != "postgres":
            yield
            return
        async with self.engine.pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock($1)", SCHEMA_LOCK)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", SCHEMA_LOCK)

    async def _apply(self, step: Step) -> bool:
        os.environ[ENVIRONMENT_VARIABLE] = _CONF_MODULE  # where Piccolo's engine_finder() looks
        token = piccolo_conf.MIGRATING_ENGINE.set(self.engine)
        try:
            async with self.engine.transaction():
                recorded = self.record.name == step.id
                if await self.record.exists().where(recorded & (self.record.app_name == step.app)):
                    return False  # another process applied it while we waited
                manager = await step.module.forwards()
                if isinstance(manager, MigrationManager):
                    adopted = _without_existing(manager, await self._tables()) if step.first else []
                    if adopted:
                        log.info("migration %s: adopted %d existing tables", step, len(adopted))
                    with contextlib.redirect_stdout(io.StringIO()):  # Piccolo prints progress; stdout may be MCP's
                        await manager.run()
                await self.record.insert(self.record(name=step.id, app_name=step.app))
        finally:
            piccolo_conf.MIGRATING_ENGINE.reset(token)
        log.info("applied migration %s", step)
        return True

    async def _tables(self) -> set[str]:
        if self.kind == "postgres":
            rows = await self.engine.run_ddl(
                "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()"
            )
        else:
            rows = await self.engine.run_ddl("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r["name"] for r in rows}
