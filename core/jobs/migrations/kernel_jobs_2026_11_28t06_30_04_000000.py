"""A later migration of core/jobs: `tw_job_events`, the steps of each job's life (accepted,
started, retried, progress, completed, failed, cancelled), shown on the console's job page."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, BigSerial, Integer, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T06:30:04:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_job_events"

TABLES = {
    "tw_job_events": (
        "JobEvent",
        {
            "seq": (BigSerial, {"primary_key": True}),
            "job_id": (Varchar, {"length": 40, "index": True}),
            "at_ms": (BigInt, {}),
            "kind": (Varchar, {"length": 16}),
            "attempt": (Integer, {"default": None, "null": True}),
            "text": (Text, {"default": None, "null": True}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_jobs", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
