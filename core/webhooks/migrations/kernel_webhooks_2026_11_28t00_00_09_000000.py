"""The first migration of core/webhooks: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, BigSerial, Boolean, Integer, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:09:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: webhooks, webhook attempts"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_webhook_attempts": (
        "WebhookAttempt",
        {
            "id": (BigSerial, {"primary_key": True}),
            "webhook_id": (Varchar, {"length": 40, "index": True}),
            "attempt": (Integer, {}),
            "started_ms": (BigInt, {}),
            "duration_ms": (Integer, {}),
            "status_code": (Integer, {"default": None, "null": True}),
            "error": (Text, {"default": None, "null": True}),
        },
    ),
    "tw_webhooks": (
        "Webhook",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "kind": (Varchar, {"length": 32}),
            "subject": (Varchar, {"length": 64, "index": True}),
            "url": (Text, {}),
            "secret": (Text, {}),
            "body": (Text, {}),
            "numbered": (Boolean, {}),
            "state": (Varchar, {"length": 12, "index": True}),
            "attempts": (Integer, {}),
            "next_attempt_ms": (BigInt, {"index": True}),
            "lease_until_ms": (BigInt, {}),
            "created_ms": (BigInt, {}),
            "updated_ms": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_webhooks", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
