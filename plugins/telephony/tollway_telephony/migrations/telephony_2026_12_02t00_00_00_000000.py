"""Telephony migration 3: each agent's own number (`telephony_numbers`)."""

from piccolo.columns import BigInt, Integer, Varchar

from tollway import MigrationManager

ID = "2026-12-02T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "telephony_numbers"

COLUMNS = (
    ("id", Varchar, {"length": 40, "primary_key": True}),
    ("holder", Varchar, {"length": 140, "null": True, "default": None}),
    ("agent_id", Varchar, {"length": 64}),
    ("account_sid", Varchar, {"length": 64}),
    ("country", Varchar, {"length": 2}),
    ("phone_number", Varchar, {"length": 20, "null": True, "default": None}),
    ("sid", Varchar, {"length": 64, "null": True, "default": None}),
    ("state", Varchar, {"length": 16}),
    ("monthly_cost", BigInt, {}),
    ("billed_months", Integer, {}),
    ("last_used_ms", BigInt, {}),
    ("warned_ms", BigInt, {"null": True, "default": None}),
    ("provisioned_ms", BigInt, {"null": True, "default": None}),
    ("released_ms", BigInt, {"null": True, "default": None}),
    ("created_ms", BigInt, {}),
    ("updated_ms", BigInt, {}),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="telephony", description=DESCRIPTION)
    manager.add_table(class_name="PhoneNumber", tablename="telephony_numbers")
    for name, column, params in COLUMNS:
        manager.add_column(
            table_class_name="PhoneNumber",
            tablename="telephony_numbers",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
