"""A later migration of core/credits: fewer index pages per paid call. `tw_ledger_account_newest`
(account, created_ms, id) serves every read by account, so the single-column index on account
goes; nothing reads holds by agent, so that index goes; the index of holds by state becomes a
partial index of the holds still `held` by creation time (what the reconciler and the pending
report read), so a hold is indexed only while it is held. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Varchar

from tollway._core.storage.migration_steps import drop_column_index, run_ddl

ID = "2026-11-28T08:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "ledger and holds: drop indexes nothing needs; holds still held, partial"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_credits", description=DESCRIPTION)
    drop_column_index(manager, "tw_ledger", "LedgerEntry", "account", Varchar)
    drop_column_index(manager, "tw_credit_holds", "CreditHold", "agent_id", Varchar)
    drop_column_index(manager, "tw_credit_holds", "CreditHold", "state", Varchar)
    run_ddl(
        manager,
        ("CREATE INDEX IF NOT EXISTS tw_credit_holds_held ON tw_credit_holds (created_ms) WHERE state = 'held'",),
    )
    return manager
