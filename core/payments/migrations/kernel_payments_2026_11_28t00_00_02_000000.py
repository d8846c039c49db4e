"""The first migration of core/payments: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: quotes, payment authorizations, test-network balances"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_chain_balances": (
        "ChainBalance",
        {
            "address": (Varchar, {"length": 60, "primary_key": True}),
            "balance": (BigInt, {}),
        },
    ),
    "tw_quotes": (
        "Quote",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "tool": (Varchar, {"length": 64}),
            "input_hash": (Varchar, {"length": 64}),
            "amount": (BigInt, {}),
            "pay_to": (Varchar, {"length": 42}),
            "network": (Varchar, {"length": 32}),
            "expires_ms": (BigInt, {}),
            "used_ms": (BigInt, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
        },
    ),
    "tw_payment_authorizations": (
        "PaymentAuthorization",
        {
            "id": (Varchar, {"length": 64, "primary_key": True}),
            "payer": (Varchar, {"length": 42, "index": True}),
            "pay_to": (Varchar, {"length": 42}),
            "value": (BigInt, {}),
            "nonce": (Varchar, {"length": 66}),
            "quote_id": (Varchar, {"length": 40, "default": None, "null": True}),
            "purpose": (Varchar, {"length": 64}),
            "status": (Varchar, {"length": 16}),
            "settlement_tx": (Varchar, {"length": 66, "default": None, "null": True}),
            "payload": (Text, {}),
            "receipt_id": (Varchar, {"length": 40, "default": None, "null": True}),
            "created_ms": (BigInt, {}),
            "updated_ms": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_payments", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
