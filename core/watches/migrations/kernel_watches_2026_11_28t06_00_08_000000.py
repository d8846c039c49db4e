"""Migration of core/watches: indexes of the operator's watch reads (the console's watches and
webhooks page): watches counted by state, and the latest watch deliveries. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager

from tollway._core.storage.migration_steps import add_indexes

ID = "2026-11-28T06:00:08:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the operator's watch reads"


INDEXES = (
    # Watches by state: the count reads this index only (covering), never the rows.
    "CREATE INDEX IF NOT EXISTS tw_watches_state ON tw_watches (status, pause_reason, deleted_ms)",
    # The latest deliveries, newest first: read backwards, no sort.
    "CREATE INDEX IF NOT EXISTS tw_watch_deliveries_newest ON tw_watch_deliveries (detected_ms, id)",
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_watches", description=DESCRIPTION)
    add_indexes(manager, INDEXES)
    return manager
