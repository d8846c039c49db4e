"""Kernel migration 9: tw_payouts, agents' credits withdrawn to wallets (core/credits/payouts.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

ID = "2026-11-26T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_payouts"

_NULL = {"null": True, "default": None}
COLUMNS = (
    ("id", Varchar, {"length": 40, "primary_key": True}),
    ("agent_id", Varchar, {"length": 36, "index": True}),
    ("to_address", Varchar, {"length": 42}),
    ("amount", BigInt, {}),
    ("status", Varchar, {"length": 12, "index": True}),
    ("payment", Text, {}),
    ("settlement_tx", Varchar, {"length": 66, **_NULL}),
    ("reason", Text, _NULL),
    ("created_ms", BigInt, {}),
    ("updated_ms", BigInt, {}),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_table(class_name="Payout", tablename="tw_payouts")
    for name, column, params in COLUMNS:
        manager.add_column(
            table_class_name="Payout",
            tablename="tw_payouts",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
