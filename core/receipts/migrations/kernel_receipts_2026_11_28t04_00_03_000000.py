"""The second migration of core/receipts: indexes of the operator's receipt listing (the
console's receipts page, newest first by keyset, every agent's or one agent's). Raw DDL
runs before a migration's tables are made, so it comes after the first. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T04:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the receipts listing by keyset"


INDEXES = (
    # Every agent's receipts, newest first: ORDER BY created_ms DESC, receipt_id DESC read
    # backwards from the keyset's position, no sort.
    "CREATE INDEX IF NOT EXISTS tw_receipts_newest ON tw_receipts (created_ms, receipt_id)",
    # One agent's receipts, newest first.
    "CREATE INDEX IF NOT EXISTS tw_receipts_agent_newest ON tw_receipts (agent_id, created_ms, receipt_id)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_receipts", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
