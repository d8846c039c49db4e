"""Goals migration 4: code-host connections (a GitHub App installation an agent approved, its repositories)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

ID = "2026-11-26T00:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "goals_connections"

COLUMNS = (
    ("id", Varchar, {"length": 64, "primary_key": True}),
    ("agent_id", Varchar, {"length": 64, "index": True}),
    ("name", Varchar, {"length": 100}),
    ("kind", Varchar, {"length": 16}),
    ("status", Varchar, {"length": 16}),
    ("state_hash", Varchar, {"length": 64}),
    ("link_expires_ms", BigInt, {}),
    ("link_used_ms", BigInt, {"null": True, "default": None}),
    ("installation_id", BigInt, {"null": True, "default": None}),
    ("repositories", Text, {}),
    ("created_ms", BigInt, {}),
    ("updated_ms", BigInt, {}),
    ("revoked_ms", BigInt, {"null": True, "default": None}),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    manager.add_table(class_name="Connection", tablename="goals_connections")
    for name, column, params in COLUMNS:
        manager.add_column(
            table_class_name="Connection",
            tablename="goals_connections",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
