"""The first migration of core/credits: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: ledger, top-ups, holds, top-up attempts, payouts"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_credit_top_ups": (
        "CreditTopUp",
        {
            "settlement_tx": (Varchar, {"length": 66, "primary_key": True}),
            "transaction_id": (Varchar, {"length": 40}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "amount": (BigInt, {}),
            "credits_balance": (BigInt, {}),
            "memo": (Text, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
        },
    ),
    "tw_top_up_attempts": (
        "TopUpAttempt",
        {
            "id": (Varchar, {"length": 64, "primary_key": True}),
            "payer": (Varchar, {"length": 42, "index": True}),
            "amount": (BigInt, {}),
            "memo": (Text, {"default": None, "null": True}),
            "status": (Varchar, {"length": 12, "index": True}),
            "settlement_tx": (Varchar, {"length": 66, "default": None, "null": True}),
            "reason": (Text, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
            "updated_ms": (BigInt, {}),
        },
    ),
    "tw_credit_holds": (
        "CreditHold",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "amount": (BigInt, {}),
            "tool": (Varchar, {"length": 64}),
            "receipt_id": (Varchar, {"length": 40}),
            "memo": (Text, {"default": None, "null": True}),
            "decision_context": (Text, {"default": None, "null": True}),
            "state": (Varchar, {"length": 12, "index": True}),
            "created_ms": (BigInt, {}),
            "resolved_ms": (BigInt, {"default": None, "null": True}),
        },
    ),
    "tw_payouts": (
        "Payout",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "to_address": (Varchar, {"length": 42}),
            "amount": (BigInt, {}),
            "status": (Varchar, {"length": 12, "index": True}),
            "payment": (Text, {}),
            "settlement_tx": (Varchar, {"length": 66, "default": None, "null": True}),
            "reason": (Text, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
            "updated_ms": (BigInt, {}),
        },
    ),
    "tw_ledger": (
        "LedgerEntry",
        {
            "id": (Varchar, {"length": 40, "primary_key": True}),
            "account": (Varchar, {"length": 80, "index": True}),
            "delta": (BigInt, {}),
            "balance_after": (BigInt, {}),
            "kind": (Varchar, {"length": 24}),
            "reference": (Varchar, {"length": 120, "default": None, "null": True, "index": True}),
            "memo": (Text, {"default": None, "null": True}),
            "created_ms": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_credits", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
