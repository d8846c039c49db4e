"""The sixth migration of core/receipts: fewer index pages per paid call. `tw_receipts_newest`
(created_ms, receipt_id) and `tw_receipts_agent_newest` (agent_id, created_ms, receipt_id) serve
every read the single-column indexes on created_ms and agent_id served, so those two go; the
index of job_id becomes partial (job receipts only), so an inline call's receipt writes none
of it. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Varchar

from tollway._core.storage.migration_steps import drop_column_index, run_ddl

ID = "2026-11-28T08:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "receipts: drop the indexes the newest-first ones cover; job_id partial"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_receipts", description=DESCRIPTION)
    for column, column_class in (("created_ms", BigInt), ("agent_id", Varchar), ("job_id", Varchar)):
        drop_column_index(manager, "tw_receipts", "Receipt", column, column_class)
    run_ddl(manager, ("CREATE INDEX IF NOT EXISTS tw_receipts_job ON tw_receipts (job_id) WHERE job_id IS NOT NULL",))
    return manager
