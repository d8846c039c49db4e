"""The third migration of core/receipts: the private columns the operator's figures group by
(payment method, execution status, the tool's run time) and the tables of ended days'
revenue with their marks (core/receipts/day_totals.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer, Varchar

from tollway._core.storage.migration_steps import add_columns, add_tables

ID = "2026-11-28T06:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "receipts' figure columns, ended days' revenue"

COLUMNS = (
    ("payment_method", Varchar, {"length": 16, "null": True, "default": None}),
    ("execution_status", Varchar, {"length": 16, "null": True, "default": None}),
    ("duration_ms", Integer, {"null": True, "default": None}),
)
TABLES = {
    "tw_receipt_days": (
        "ReceiptDay",
        {
            "id": (Varchar, {"length": 80, "primary_key": True}),
            "day": (BigInt, {"index": True}),
            "category": (Varchar, {"length": 32}),
            "payment_method": (Varchar, {"length": 16}),
            "total": (BigInt, {}),
        },
    ),
    "tw_receipt_day_marks": (
        "ReceiptDayMark",
        {
            "day": (BigInt, {"primary_key": True}),
            "changes": (BigInt, {"default": 0}),
            "summed_at": (BigInt, {"default": None, "null": True}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_receipts", description=DESCRIPTION)
    add_columns(manager, "tw_receipts", "Receipt", COLUMNS)
    add_tables(manager, TABLES)
    return manager
