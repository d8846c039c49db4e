"""A later migration of core/credits: the index of every agent's latest payouts (the
console's marketplace page, newest first), so the page reads an index backwards rather than
sorting every payout. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T06:30:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "index of the latest payouts"

INDEX = "CREATE INDEX IF NOT EXISTS tw_payouts_newest ON tw_payouts (created_ms, id)"


async def _index() -> None:
    await engine_finder().run_ddl(INDEX)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_credits", description=DESCRIPTION)
    manager.add_raw(_index)
    return manager
