"""Commerce migration 1: ACP tokens, checkout sessions, orders, idempotency records (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer, Text, Varchar

from tollway import storage

ID = "2026-11-27T18:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_acp_tokens, commerce_sessions, commerce_orders, commerce_idempotency"

_NULL = {"null": True, "default": None}
TABLES = {
    "commerce_acp_tokens": (
        "AcpToken",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("platform", Varchar, {"length": 100}),
            ("token_hash", Varchar, {"length": 64, "unique": True}),
            ("agent_id", Varchar, {"length": 36}),
            ("webhook_url", Text, {**_NULL}),
            ("webhook_secret", Text, {**_NULL}),
            ("signing_key", Text, {**_NULL}),
            ("created_ms", BigInt, {}),
            ("revoked_ms", BigInt, {**_NULL}),
        ),
    ),
    "commerce_sessions": (
        "CheckoutSession",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("token_id", Varchar, {"length": 40, "index": True}),
            ("status", Varchar, {"length": 32, "index": True}),
            ("state", Text, {}),
            ("total", BigInt, {}),
            ("attempt", Integer, {"default": 0}),
            ("payment_intent", Varchar, {"length": 80, **_NULL}),
            ("complete_started_ms", BigInt, {**_NULL}),
            ("payment", Text, {**_NULL}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {"index": True}),
            ("expires_ms", BigInt, {}),
        ),
    ),
    "commerce_orders": (
        "Order",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("session_id", Varchar, {"length": 40, "unique": True}),
            ("token_id", Varchar, {"length": 40, "index": True}),
            ("agent_id", Varchar, {"length": 36}),
            ("receipt_id", Varchar, {"length": 40}),
            ("payment_intent", Varchar, {"length": 80}),
            ("total", BigInt, {}),
            ("status", Varchar, {"length": 16}),
            ("created_ms", BigInt, {}),
        ),
    ),
    "commerce_idempotency": (
        "IdempotencyRecord",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("fingerprint", Varchar, {"length": 64}),
            ("status", Integer, {**_NULL}),
            ("body", Text, {**_NULL}),
            ("started_ms", BigInt, {}),
            ("created_ms", BigInt, {"index": True}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    return manager
