"""The first migration of core/calls: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:06:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: rate counters, idempotency records"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_rate_counters": (
        "RateCounter",
        {
            "id": (Varchar, {"primary_key": True}),
            "hits": (Integer, {}),
            "expires_ms": (BigInt, {"index": True}),
        },
    ),
    "tw_idempotency": (
        "IdempotencyRecord",
        {
            "id": (Varchar, {"length": 64, "primary_key": True}),
            "scope": (Text, {}),
            "body_hash": (Varchar, {"length": 64}),
            "state": (Varchar, {"length": 8}),
            "owner": (Varchar, {"length": 32, "default": None, "null": True}),
            "lease_until_ms": (BigInt, {}),
            "status": (Integer, {"default": None, "null": True}),
            "body": (Text, {"default": None, "null": True}),
            "headers": (Text, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
            "expires_ms": (BigInt, {"index": True}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_calls", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
