"""Email migration 3: what the email tool sent (for its job's tracking) and the plugin's own
key that signs tracking links."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer, Text, Varchar

ID = "2026-11-26T00:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "email_sent, email_keys"

TABLES = (
    (
        "SentEmail",
        "email_sent",
        (
            ("request_id", Varchar, {"length": 64, "primary_key": True}),
            ("agent_id", Varchar, {"length": 64}),
            ("sender", Text, {}),
            ("recipient", Text, {}),
            ("subject", Text, {}),
            ("status", Varchar, {"length": 16}),
            ("opens", Integer, {}),
            ("clicks", Integer, {}),
            ("links", Text, {}),
            ("message_id", Text, {"null": True, "default": None}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    (
        "EmailKey",
        "email_keys",
        (
            ("name", Varchar, {"length": 64, "primary_key": True}),
            ("value", Text, {}),
        ),
    ),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="email", description=DESCRIPTION)
    for class_name, tablename, columns in TABLES:
        manager.add_table(class_name=class_name, tablename=tablename)
        for name, column, params in columns:
            manager.add_column(
                table_class_name=class_name,
                tablename=tablename,
                column_name=name,
                db_column_name=name,
                column_class=column,
                params=params,
            )
    return manager
