"""Goals migration 3: the service's own secrets of the goals plugin (the key that signs
approval links), made once and shared by every process through the database."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

ID = "2026-11-26T00:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "goals_secrets"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    manager.add_table(class_name="Secret", tablename="goals_secrets")
    for name, column, params in (
        ("name", Varchar, {"length": 64, "primary_key": True}),
        ("value", Text, {}),
        ("created_ms", BigInt, {}),
    ):
        manager.add_column(
            table_class_name="Secret",
            tablename="goals_secrets",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
