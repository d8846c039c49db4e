"""The fifth migration of core/receipts: a partial index of the receipts still waiting for
their payment (`pending`, `refund_due`), which the pending report (the console's overview,
`tollway reconcile`) reads: a handful among millions, found without reading the others.
Partial, so a settled receipt, nearly all of them, costs it nothing to write."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager

from tollway._core.storage.migration_steps import add_indexes

ID = "2026-11-28T07:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "index of the receipts waiting for their payment"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_receipts", description=DESCRIPTION)
    add_indexes(
        manager,
        (
            "CREATE INDEX IF NOT EXISTS tw_receipts_unsettled ON tw_receipts (created_ms) "
            "WHERE status IN ('pending', 'refund_due')",
        ),
    )
    return manager
