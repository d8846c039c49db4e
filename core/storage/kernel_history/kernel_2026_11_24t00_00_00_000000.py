"""Kernel migration 3: history (facts, their heads and numbers), watches and their
deliveries, the webhook outbox, and the origin of access tokens.

A frozen copy of the table definitions of this release; their composite indexes
come in the next migration (Piccolo runs a migration's raw statements first).
"""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, BigSerial, Boolean, DoublePrecision, Integer, Text, Varchar

ID = "2026-11-24T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "history, watches, webhook outbox; access token origin"

_NULL = {"null": True, "default": None}
_SERIAL = (BigSerial, {"primary_key": True})
_BIG = (BigInt, {})
_BIG_NULL = (BigInt, _NULL)
_TEXT = (Text, {})
_TEXT_NULL = (Text, _NULL)


def _str(length: int, **more) -> tuple:
    return (Varchar, {"length": length, **more})


def _str_null(length: int) -> tuple:
    return (Varchar, {"length": length, **_NULL})


TABLES: dict[str, tuple[str, dict[str, tuple]]] = {
    "tw_facts": (
        "FactRecord",
        {
            "id": _SERIAL,
            "attribute": _str(64),
            "entity_key": _str(256),
            "source": _str(120),
            "owner": _str(36, default=""),
            "listed": (Boolean, {"default": True}),
            "value": _TEXT,
            "value_hash": _str(64),
            "as_of": _str_null(40),
            "first_seen_ms": _BIG,
            "changed_on": _str(10),
            "recorded_by": _str_null(36),
        },
    ),
    "tw_fact_heads": (
        "FactHead",
        {
            "id": _SERIAL,
            "attribute": _str(64),
            "entity_key": _str(256),
            "source": _str(120),
            "owner": _str(36, default=""),
            "value_hash": _str(64),
            "listed": (Boolean, {"default": True}),
            "fact_id": _BIG,
        },
    ),
    "tw_fact_numbers": (
        "FactNumber",
        {
            "id": _SERIAL,
            "attribute": _str(64),
            "source": _str(120),
            "entity_key": _str(256),
            "field": _str(64),
            "number": (DoublePrecision, {}),
            **{f"peer_{i}": _str_null(120) for i in range(1, 6)},
            "as_of": _str_null(40),
            "updated_ms": _BIG,
        },
    ),
    "tw_watches": (
        "Watch",
        {
            "id": _str(36, primary_key=True),
            "agent_id": _str(36, index=True),
            "entity_type": _str(32),
            "attribute": _str(64),
            "entity_key": _str(256),
            "max_spend": _BIG,
            "spent": (BigInt, {"default": 0}),
            "price_per_change": _BIG,
            "changes_delivered": (Integer, {"default": 0}),
            "status": _str(12),
            "pause_reason": _str_null(12),
            "pause_notified": (Boolean, {"default": False}),
            "webhook_url": _TEXT_NULL,
            "webhook_secret": _TEXT_NULL,
            "last_delivery_ms": _BIG_NULL,
            "created_ms": _BIG,
            "updated_ms": _BIG,
            "deleted_ms": _BIG_NULL,
        },
    ),
    "tw_watch_deliveries": (
        "WatchDelivery",
        {
            "id": _str(40, primary_key=True),
            "watch_id": _str(36, index=True),
            "change_ref": _str(80),
            "seq": _BIG,
            "change": _TEXT,
            "state": _str(12),
            "receipt_id": _str_null(40),
            "charged": _BIG_NULL,
            "detected_ms": _BIG,
            "delivered_ms": _BIG_NULL,
        },
    ),
    "tw_webhooks": (
        "Webhook",
        {
            "id": _str(40, primary_key=True),
            "kind": _str(32),
            "subject": _str(64, index=True),
            "url": _TEXT,
            "secret": _TEXT,
            "body": _TEXT,
            "numbered": (Boolean, {"default": False}),
            "state": _str(12, index=True),
            "attempts": (Integer, {"default": 0}),
            "next_attempt_ms": (BigInt, {"index": True}),
            "lease_until_ms": (BigInt, {"default": 0}),
            "created_ms": _BIG,
            "updated_ms": _BIG,
        },
    ),
    "tw_webhook_attempts": (
        "WebhookAttempt",
        {
            "id": _SERIAL,
            "webhook_id": _str(40, index=True),
            "attempt": (Integer, {}),
            "started_ms": _BIG,
            "duration_ms": (Integer, {}),
            "status_code": (Integer, _NULL),
            "error": _TEXT_NULL,
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
    manager.add_column(
        table_class_name="AccessToken",
        tablename="tw_access_tokens",
        column_name="origin",
        db_column_name="origin",
        column_class=Varchar,
        params={"length": 16, "default": "operator"},
    )
    return manager
