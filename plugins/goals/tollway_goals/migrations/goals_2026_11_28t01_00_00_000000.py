"""Goals migration 6: the messages a session sent through the service's tools (texts,
calls, emails), so that what answers one wakes that session (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Varchar

from tollway import storage

ID = "2026-11-28T01:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "goals_sent"

TABLES = {
    "goals_sent": (
        "Sent",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("request_id", Varchar, {"length": 64, "index": True}),
            ("goal_id", Varchar, {"length": 64}),
            ("case_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("session_id", Varchar, {"length": 64}),
            ("tool", Varchar, {"length": 40}),
            ("channel", Varchar, {"length": 8}),
            ("provider_id", Varchar, {"length": 255, "index": True}),
            ("recipient", Varchar, {"length": 320}),
            ("created_ms", BigInt, {}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    return manager
