"""The second migration of core/watches: indexes of the watch read paths (raw DDL runs before a migration's
tables are made, so it comes after the first). Idempotent: a database made before
the areas owned their tables has it already."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T00:01:08:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the watch read paths"


INDEXES = (
    # Source polls: the watches of one entity.
    "CREATE INDEX IF NOT EXISTS tw_watches_entity ON tw_watches (attribute, entity_key)",
    # Delivery: each change once per watch, and a watch's pending changes in order.
    "CREATE UNIQUE INDEX IF NOT EXISTS tw_watch_deliveries_change ON tw_watch_deliveries (watch_id, change_ref)",
    "CREATE INDEX IF NOT EXISTS tw_watch_deliveries_queue ON tw_watch_deliveries (state, watch_id, seq)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_watches", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
