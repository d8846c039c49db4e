"""The first migration of core/watches: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:08:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: watches, watch deliveries"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_watch_deliveries": (
        "WatchDelivery",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "watch_id": (Varchar, {"length": 36, "index": True}),
            "change_ref": (Varchar, {"length": 80}),
            "seq": (BigInt, {}),
            "change": (Text, {}),
            "state": (Varchar, {"length": 12}),
            "receipt_id": (Varchar, {"length": 40, "default": None, "null": True}),
            "charged": (BigInt, {"default": None, "null": True}),
            "detected_ms": (BigInt, {}),
            "delivered_ms": (BigInt, {"default": None, "null": True}),
        },
    ),
    "tw_watches": (
        "Watch",
        {
            "id": (Varchar, {"length": 36, "primary_key": True}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "entity_type": (Varchar, {"length": 32}),
            "attribute": (Varchar, {"length": 64}),
            "entity_key": (Varchar, {"length": 256}),
            "max_spend": (BigInt, {}),
            "spent": (BigInt, {}),
            "price_per_change": (BigInt, {}),
            "changes_delivered": (Integer, {}),
            "status": (Varchar, {"length": 12}),
            "pause_reason": (Varchar, {"length": 12, "default": None, "null": True}),
            "pause_notified": (Boolean, {}),
            "webhook_url": (Text, {"default": None, "null": True}),
            "webhook_secret": (Text, {"default": None, "null": True}),
            "last_delivery_ms": (BigInt, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
            "updated_ms": (BigInt, {}),
            "deleted_ms": (BigInt, {"default": None, "null": True}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_watches", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
