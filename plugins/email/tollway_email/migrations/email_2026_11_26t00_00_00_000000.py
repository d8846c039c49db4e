"""Email migration 1: the inbox, its attachments and their contents stored once."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Bytea, Integer, Text, Varchar

ID = "2026-11-26T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "email_inbox, email_attachments, email_blobs"

TABLES = (
    (
        "InboxEmail",
        "email_inbox",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("agent_id", Varchar, {"length": 64}),
            ("sender", Text, {}),
            ("recipients", Text, {}),
            ("subject", Text, {}),
            ("message_id", Text, {"null": True, "default": None}),
            ("thread_id", Text, {}),
            ("body", Text, {}),
            ("body_html", Text, {"null": True, "default": None}),
            ("received_ms", BigInt, {}),
        ),
    ),
    (
        "InboxAttachment",
        "email_attachments",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("email_id", Varchar, {"length": 64, "index": True}),
            ("position", Integer, {}),
            ("filename", Text, {}),
            ("content_type", Text, {}),
            ("size", BigInt, {}),
            ("sha256", Varchar, {"length": 64}),
        ),
    ),
    (
        "Blob",
        "email_blobs",
        (
            ("sha256", Varchar, {"length": 64, "primary_key": True}),
            ("content", Bytea, {}),
            ("size", BigInt, {}),
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
