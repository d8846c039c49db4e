"""A later migration of core/credits: the index of one account's latest ledger rows (the
console's agent page, newest first), so a busy agent's page reads an index backwards
rather than sorting every row it ever moved. Raw DDL runs before a migration's tables are
made, so it comes after the first. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T04:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "index of an account's latest ledger rows"

INDEX = "CREATE INDEX IF NOT EXISTS tw_ledger_account_newest ON tw_ledger (account, created_ms, id)"


async def _index() -> None:
    await engine_finder().run_ddl(INDEX)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_credits", description=DESCRIPTION)
    manager.add_raw(_index)
    return manager
