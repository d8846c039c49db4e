"""The second migration of core/calls: tw_rate_counters is UNLOGGED on PostgreSQL (raw DDL runs before a migration's
tables are made, so it comes after the first). Idempotent: a database made before
the areas owned their tables has it already."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T00:01:06:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_rate_counters is UNLOGGED on PostgreSQL"


_PERSISTENCE = "SELECT relpersistence FROM pg_class WHERE oid = 'tw_rate_counters'::regclass"


async def _unlogged() -> None:
    """Rate counters skip PostgreSQL's write-ahead log: a row lost in a crash only
    restarts a window from zero, and every request of an agent updates one."""
    engine = engine_finder()
    if engine is None or engine.engine_type != "postgres":
        return
    rows = await engine.run_ddl(_PERSISTENCE)
    if rows[0]["relpersistence"] != "u":
        await engine.run_ddl("ALTER TABLE tw_rate_counters SET UNLOGGED")


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_calls", description=DESCRIPTION)
    manager.add_raw(_unlogged)
    return manager
