"""Commerce buyer migration 2: what an order's complete was sent with (`payment_handler_id`,
`payment_token`) and when (`completing_ms`), so a job whose merchant left the payment's
outcome unknown asks it again with the identical request."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text

ID = "2026-11-27T21:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_buyer_orders.payment_handler_id, .payment_token, .completing_ms"

_NULL = {"null": True, "default": None}
COLUMNS = (
    ("payment_handler_id", Text, _NULL),
    ("payment_token", Text, _NULL),
    ("completing_ms", BigInt, _NULL),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce_buyer", description=DESCRIPTION)
    for name, column, params in COLUMNS:
        manager.add_column(
            table_class_name="Order",
            tablename="commerce_buyer_orders",
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
