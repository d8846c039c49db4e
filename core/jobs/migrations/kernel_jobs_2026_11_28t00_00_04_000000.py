"""The first migration of core/jobs: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:04:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: jobs"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_jobs": (
        "Job",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "tool": (Varchar, {"length": 64}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "status": (Varchar, {"length": 16, "index": True}),
            "input": (Text, {}),
            "result": (Text, {"default": None, "null": True}),
            "error": (Text, {"default": None, "null": True}),
            "error_code": (Varchar, {"length": 40, "default": None, "null": True}),
            "error_category": (Varchar, {"length": 40, "default": None, "null": True}),
            "error_status": (Integer, {"default": None, "null": True}),
            "receipt_id": (Varchar, {"length": 40, "default": None, "null": True}),
            "attempt": (Integer, {}),
            "lease_until_ms": (BigInt, {"default": None, "null": True}),
            "worker_id": (Varchar, {"length": 80, "default": None, "null": True}),
            "created_ms": (BigInt, {"index": True}),
            "updated_ms": (BigInt, {}),
            "started_ms": (BigInt, {"default": None, "null": True}),
            "finished_ms": (BigInt, {"default": None, "null": True}),
            "message": (Text, {"default": None, "null": True}),
            "waiting_for": (Varchar, {"length": 16, "default": None, "null": True}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_jobs", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
