"""Postal migration 1: postal_letters, one row per physical mail job."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer, Text, Varchar

ID = "2026-11-26T10:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "postal_letters"

COLUMNS = (
    ("request_id", Varchar, {"length": 64, "primary_key": True}),
    ("agent_id", Varchar, {"length": 64, "index": True}),
    ("state", Varchar, {"length": 16}),
    ("color", Integer, {}),
    ("lob_key", Varchar, {"length": 128}),
    ("verification", Text, {"null": True, "default": None}),
    ("letter_id", Varchar, {"length": 80, "null": True, "default": None}),
    ("expected_delivery_date", Text, {"null": True, "default": None}),
    ("created_ms", BigInt, {}),
    ("updated_ms", BigInt, {}),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="postal", description=DESCRIPTION)
    manager.add_table(class_name="PostalLetter", tablename="postal_letters")
    for name, column, params in COLUMNS:
        manager.add_column(
            table_class_name="PostalLetter",
            tablename="postal_letters",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
