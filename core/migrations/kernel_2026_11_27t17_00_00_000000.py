"""Kernel migration: `tw_webhooks.signing`, how a webhook is signed: NULL for the service's own
signature, 'acp' for an ACP merchant's order event (`Merchant-Signature`; core/webhooks/signing.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Varchar

ID = "2026-11-27T17:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_webhooks.signing"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Webhook",
        tablename="tw_webhooks",
        column_name="signing",
        db_column_name="signing",
        column_class=Varchar,
        params={"length": 16, "null": True, "default": None},
    )
    return manager
