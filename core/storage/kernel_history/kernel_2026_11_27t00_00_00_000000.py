"""Kernel migration 10: `tw_jobs.waiting_for`, set to 'payment' while a job's x402 payment
has not settled: no worker claims such a job (core/jobs/jobs.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Varchar

ID = "2026-11-27T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_jobs.waiting_for"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Job",
        tablename="tw_jobs",
        column_name="waiting_for",
        db_column_name="waiting_for",
        column_class=Varchar,
        params={"length": 16, "null": True, "default": None},
    )
    return manager
