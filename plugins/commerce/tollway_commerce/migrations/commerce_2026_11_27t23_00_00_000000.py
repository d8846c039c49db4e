"""Commerce migration 3: commerce_orders.soul_order_open, the soul services whose souls order
the reconciler still watches (refunded in full when it ends declined or expired)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Boolean

ID = "2026-11-27T23:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_orders.soul_order_open"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Order",
        tablename="commerce_orders",
        column_name="soul_order_open",
        db_column_name="soul_order_open",
        column_class=Boolean,
        params={"default": False, "index": True},
    )
    return manager
