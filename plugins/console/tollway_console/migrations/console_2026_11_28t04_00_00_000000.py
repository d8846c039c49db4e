"""Console migration 1: sign-in sessions (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Varchar

from tollway import storage

ID = "2026-11-28T04:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "console_sessions"

TABLES = {
    "console_sessions": (
        "ConsoleSession",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("created_ms", BigInt, {}),
            ("expires_ms", BigInt, {"index": True}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="console", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    return manager
