"""Kernel migration 8: a running job's progress `message` (tw_jobs.message), shown on the
Job resource and pushed to subscribers while it runs."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Text

ID = "2026-11-24T00:00:05:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_jobs.message"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Job",
        tablename="tw_jobs",
        column_name="message",
        db_column_name="message",
        column_class=Text,
        params={"null": True, "default": None},
    )
    return manager
