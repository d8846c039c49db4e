"""The first migration of core/messages: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:05:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: notifications"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_notifications": (
        "Notification",
        {
            "id": (Varchar, {"length": 36, "primary_key": True}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "type": (Varchar, {"length": 32}),
            "title": (Text, {}),
            "body": (Text, {"default": None, "null": True}),
            "metadata": (Text, {}),
            "read": (Boolean, {}),
            "created_ms": (BigInt, {"index": True}),
            "seq": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_messages", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
