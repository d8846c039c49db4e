"""Commerce migration 2: operator refunds of completed orders (a frozen copy of tables.Refund)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

ID = "2026-11-27T21:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_refunds"

_NULL = {"null": True, "default": None}
COLUMNS = (
    ("id", Varchar, {"length": 40, "primary_key": True}),
    ("order_id", Varchar, {"length": 40, "index": True}),
    ("key_hash", Varchar, {"length": 64, "unique": True}),
    ("fingerprint", Varchar, {"length": 64}),
    ("amount", BigInt, {}),
    ("reason", Text, {"default": ""}),
    ("status", Varchar, {"length": 12, "index": True}),
    ("psp_refund_id", Varchar, {"length": 80, **_NULL}),
    ("receipt_id", Varchar, {"length": 40, **_NULL}),
    ("credits_taken", BigInt, {"default": 0}),
    ("share_taken", BigInt, {"default": 0}),
    ("error", Text, {**_NULL}),
    ("started_ms", BigInt, {}),
    ("created_ms", BigInt, {}),
    ("updated_ms", BigInt, {}),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce", description=DESCRIPTION)
    manager.add_table(class_name="Refund", tablename="commerce_refunds")
    for name, column, params in COLUMNS:
        manager.add_column(
            table_class_name="Refund",
            tablename="commerce_refunds",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
