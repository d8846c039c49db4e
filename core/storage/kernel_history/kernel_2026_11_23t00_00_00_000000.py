"""Kernel migration 1: the schema every release before migrations created (tables and indexes).

A frozen copy of the table definitions of that release, not an import of
core/storage/tables.py: later edits to the tables must come as new migrations.
"""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar

ID = "2026-11-23T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "the first schema: every kernel table"

_NULL = {"null": True, "default": None}


def _key(length: int) -> tuple:
    return (Varchar, {"length": length, "primary_key": True})


def _str(length: int, **more) -> tuple:
    return (Varchar, {"length": length, **more})


def _str_null(length: int, **more) -> tuple:
    return (Varchar, {"length": length, **_NULL, **more})


_BIG = (BigInt, {})
_BIG_NULL = (BigInt, _NULL)
_INT = (Integer, {})
_INT_NULL = (Integer, _NULL)
_TEXT = (Text, {})
_TEXT_NULL = (Text, _NULL)
_INDEXED = {"index": True}

# tablename -> (class name, {column: (column class, parameters)})
TABLES: dict[str, tuple[str, dict[str, tuple]]] = {
    "tw_agents": (
        "Agent",
        {
            "id": _key(36),
            "wallet_address": _str_null(42, unique=True, index=True),
            "name": _TEXT_NULL,
            "credits": (BigInt, {"default": 0}),
            "created_ms": _BIG,
        },
    ),
    "tw_ledger": (
        "LedgerEntry",
        {
            "id": _key(40),
            "account": _str(80, **_INDEXED),
            "delta": _BIG,
            "balance_after": _BIG,
            "kind": _str(24),
            "reference": _str_null(120, **_INDEXED),
            "memo": _TEXT_NULL,
            "created_ms": _BIG,
        },
    ),
    "tw_chain_balances": (
        "ChainBalance",
        {
            "address": _key(60),
            "balance": (BigInt, {"default": 0}),
        },
    ),
    "tw_quotes": (
        "Quote",
        {
            "id": _key(40),
            "tool": _str(64),
            "input_hash": _str(64),
            "amount": _BIG,
            "pay_to": _str(42),
            "network": _str(32),
            "expires_ms": _BIG,
            "used_ms": _BIG_NULL,
            "created_ms": _BIG,
        },
    ),
    "tw_payment_authorizations": (
        "PaymentAuthorization",
        {
            "id": _key(64),
            "payer": _str(42, **_INDEXED),
            "pay_to": _str(42),
            "value": _BIG,
            "nonce": _str(66),
            "quote_id": _str_null(40),
            "purpose": _str(64),
            "status": _str(16),
            "settlement_tx": _str_null(66),
            "payload": _TEXT,
            "receipt_id": _str_null(40),
            "created_ms": _BIG,
            "updated_ms": _BIG,
        },
    ),
    "tw_receipts": (
        "Receipt",
        {
            "receipt_id": _key(40),
            "agent_id": _str(36, **_INDEXED),
            "category": _str(32),
            "tool": _str_null(64),
            "amount": _BIG,
            "status": _str(24),
            "revision": _INT,
            "job_id": _str_null(40, **_INDEXED),
            "body": _TEXT,
            "provider_cost": _BIG_NULL,
            "created_ms": (BigInt, _INDEXED),
        },
    ),
    "tw_receipt_revisions": (
        "ReceiptRevision",
        {
            "id": _key(48),
            "receipt_id": _str(40, **_INDEXED),
            "revision": _INT,
            "body": _TEXT,
            "created_ms": _BIG,
        },
    ),
    "tw_signing_keys": (
        "SigningKey",
        {
            "key_id": _key(40),
            "public_key": _str(64),
            "active": (Boolean, {"default": True}),
            "created_ms": _BIG,
        },
    ),
    "tw_access_tokens": (
        "AccessToken",
        {
            "token_hash": _key(64),
            "agent_id": _str(36, **_INDEXED),
            "expires_ms": _BIG,
            "created_ms": _BIG,
        },
    ),
    "tw_proof_nonces": (
        "ProofNonce",
        {
            "id": _key(110),
            "expires_ms": (BigInt, _INDEXED),
        },
    ),
    "tw_credit_top_ups": (
        "CreditTopUp",
        {
            "settlement_tx": _key(66),
            "transaction_id": _str(40),
            "agent_id": _str(36, **_INDEXED),
            "amount": _BIG,
            "credits_balance": _BIG,
            "memo": _TEXT_NULL,
            "created_ms": _BIG,
        },
    ),
    "tw_jobs": (
        "Job",
        {
            "id": _key(40),
            "tool": _str(64),
            "agent_id": _str(36, **_INDEXED),
            "status": _str(16, **_INDEXED),
            "input": _TEXT,
            "result": _TEXT_NULL,
            "error": _TEXT_NULL,
            "error_code": _str_null(40),
            "error_category": _str_null(40),
            "error_status": _INT_NULL,
            "receipt_id": _str_null(40),
            "attempt": (Integer, {"default": 0}),
            "lease_until_ms": _BIG_NULL,
            "worker_id": _str_null(80),
            "created_ms": (BigInt, _INDEXED),
            "updated_ms": _BIG,
            "started_ms": _BIG_NULL,
            "finished_ms": _BIG_NULL,
        },
    ),
    "tw_notifications": (
        "Notification",
        {
            "id": _key(36),
            "agent_id": _str(36, **_INDEXED),
            "type": _str(32),
            "title": _TEXT,
            "body": _TEXT_NULL,
            "metadata": _TEXT,
            "read": (Boolean, {"default": False}),
            "created_ms": (BigInt, _INDEXED),
            "seq": (BigInt, {"default": 0}),
        },
    ),
    "tw_credit_holds": (
        "CreditHold",
        {
            "id": _key(40),
            "agent_id": _str(36, **_INDEXED),
            "amount": _BIG,
            "tool": _str(64),
            "receipt_id": _str(40),
            "memo": _TEXT_NULL,
            "decision_context": _TEXT_NULL,
            "state": _str(12, **_INDEXED),
            "created_ms": _BIG,
            "resolved_ms": _BIG_NULL,
        },
    ),
    "tw_top_up_attempts": (
        "TopUpAttempt",
        {
            "id": _key(64),
            "payer": _str(42, **_INDEXED),
            "amount": _BIG,
            "memo": _TEXT_NULL,
            "status": _str(12, **_INDEXED),
            "settlement_tx": _str_null(66),
            "reason": _TEXT_NULL,
            "created_ms": _BIG,
            "updated_ms": _BIG,
        },
    ),
    "tw_rate_counters": (
        "RateCounter",
        {
            "id": _key(255),
            "hits": (Integer, {"default": 0}),
            "expires_ms": (BigInt, _INDEXED),
        },
    ),
    "tw_idempotency": (
        "IdempotencyRecord",
        {
            "id": _key(64),
            "scope": _TEXT,
            "body_hash": _str(64),
            "state": _str(8),
            "owner": _str_null(32),
            "lease_until_ms": (BigInt, {"default": 0}),
            "status": _INT_NULL,
            "body": _TEXT_NULL,
            "headers": _TEXT_NULL,
            "created_ms": _BIG,
            "expires_ms": (BigInt, _INDEXED),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    for tablename, (class_name, columns) in TABLES.items():
        manager.add_table(class_name=class_name, tablename=tablename)
        for name, (column_class, params) in columns.items():
            manager.add_column(
                table_class_name=class_name,
                tablename=tablename,
                column_name=name,
                db_column_name=name,
                column_class=column_class,
                params=dict(params),
            )
    return manager
