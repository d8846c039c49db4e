"""Kernel migration 2: rate-limit counters skip PostgreSQL's write-ahead log.

Rows of tw_rate_counters may be lost in a PostgreSQL crash without harm (a window
restarts from zero), and UNLOGGED spares the WAL write and its fsync on the row
every request of an agent updates. SQLite has no such thing: nothing to do there.
Databases made before migrations already have it; they are left untouched.
"""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-23T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_rate_counters is UNLOGGED on PostgreSQL"

_PERSISTENCE = "SELECT relpersistence FROM pg_class WHERE oid = 'tw_rate_counters'::regclass"


async def _unlogged() -> None:
    engine = engine_finder()
    if engine is None or engine.engine_type != "postgres":
        return
    rows = await engine.run_ddl(_PERSISTENCE)
    if rows[0]["relpersistence"] != "u":
        await engine.run_ddl("ALTER TABLE tw_rate_counters SET UNLOGGED")


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_raw(_unlogged)
    return manager
