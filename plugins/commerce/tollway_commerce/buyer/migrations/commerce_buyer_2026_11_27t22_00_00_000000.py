"""Commerce buyer migration 3: the expiry an order's payment token is asked for
(`token_expires_at`), fixed before the first request so a run repeated after a crash asks
the PSP for the identical token under the same Idempotency-Key."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt

ID = "2026-11-27T22:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_buyer_orders.token_expires_at"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce_buyer", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Order",
        tablename="commerce_buyer_orders",
        column_name="token_expires_at",
        db_column_name="token_expires_at",
        column_class=BigInt,
        params={"null": True, "default": None},
    )
    return manager
