"""Commerce migration 4: the orders of soul services sold before migration 3 are watched too.
Every order whose session sold an item `soul:…` is marked; the reconciler's first sweep asks
the souls plugin about them and stops watching those that were fulfilled or refunded (an order
marked wrongly is only asked about once). Frozen copies of the columns it reads and writes."""

from typing import Any

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Boolean, Text, Varchar
from piccolo.engine import engine_finder
from piccolo.table import Table

ID = "2026-11-27T23:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_orders.soul_order_open of earlier soul service sales"


async def _mark(engine: Any = None) -> None:
    """`engine`: the one being migrated (Piccolo's `engine_finder()`) unless given."""
    db = engine or engine_finder()

    class Session(Table, tablename="commerce_sessions", db=db):
        id = Varchar(length=40, primary_key=True)
        state = Text()

    class Order(Table, tablename="commerce_orders", db=db):
        id = Varchar(length=40, primary_key=True)
        session_id = Varchar(length=40, unique=True)
        soul_order_open = Boolean(default=False)

    sold = await Session.select(Session.id).where(Session.state.like('%"soul:%'))
    ids = [r["id"] for r in sold]
    for start in range(0, len(ids), 500):
        await Order.update({Order.soul_order_open: True}).where(Order.session_id.is_in(ids[start : start + 500]))


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce", description=DESCRIPTION)
    manager.add_raw(_mark)
    return manager
