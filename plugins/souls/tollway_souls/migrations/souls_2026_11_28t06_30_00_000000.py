"""Souls migration 5: the indexes of the operator page (the console's Marketplace): the
latest souls and the latest orders, newest first, read backwards rather than sorted."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T06:30:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the operator page"

INDEXES = (
    "CREATE INDEX IF NOT EXISTS souls_agents_newest ON souls_agents (created_ms, id)",
    "CREATE INDEX IF NOT EXISTS souls_orders_newest ON souls_orders (created_ms, id)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="souls", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
