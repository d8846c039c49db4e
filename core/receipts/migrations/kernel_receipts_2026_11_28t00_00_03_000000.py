"""The first migration of core/receipts: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: receipts, revisions, signing keys"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_signing_keys": (
        "SigningKey",
        {
            "key_id": (Varchar, {"length": 40, "primary_key": True}),
            "public_key": (Varchar, {"length": 64}),
            "active": (Boolean, {"default": True}),
            "created_ms": (BigInt, {}),
        },
    ),
    "tw_receipt_revisions": (
        "ReceiptRevision",
        {
            "id": (Varchar, {"length": 48, "primary_key": True}),
            "receipt_id": (Varchar, {"length": 40, "index": True}),
            "revision": (Integer, {}),
            "body": (Text, {}),
            "created_ms": (BigInt, {}),
        },
    ),
    "tw_receipts": (
        "Receipt",
        {
            "receipt_id": (Varchar, {"length": 40, "primary_key": True}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "category": (Varchar, {"length": 32}),
            "tool": (Varchar, {"length": 64, "default": None, "null": True}),
            "amount": (BigInt, {}),
            "status": (Varchar, {"length": 24}),
            "revision": (Integer, {}),
            "job_id": (Varchar, {"length": 40, "default": None, "null": True, "index": True}),
            "body": (Text, {}),
            "provider_cost": (BigInt, {"default": None, "null": True}),
            "created_ms": (BigInt, {"index": True}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_receipts", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
