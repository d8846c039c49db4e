"""Migration of core/webhooks for the operator's outbox pages and redelivery: the columns
`budget_from` (the attempts made before the last redelivery; a fresh budget counts from
there) and `redelivered_ms`, and the indexes of the outbox listing, newest first by keyset,
every webhook's or one state's. Raw DDL runs before the columns are added; the indexes need
none of them. Idempotent indexes."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Integer

from tollway._core.storage.migration_steps import add_indexes

ID = "2026-11-28T06:00:09:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_webhooks.budget_from, redelivered_ms; indexes of the outbox listing"

INDEXES = (
    # Every webhook, newest first: ORDER BY created_ms DESC, id DESC read backwards, no sort.
    "CREATE INDEX IF NOT EXISTS tw_webhooks_newest ON tw_webhooks (created_ms, id)",
    # One state's webhooks (the given-up ones), newest first.
    "CREATE INDEX IF NOT EXISTS tw_webhooks_state_newest ON tw_webhooks (state, created_ms, id)",
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_webhooks", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Webhook",
        tablename="tw_webhooks",
        column_name="budget_from",
        db_column_name="budget_from",
        column_class=Integer,
        params={"default": 0},
    )
    manager.add_column(
        table_class_name="Webhook",
        tablename="tw_webhooks",
        column_name="redelivered_ms",
        db_column_name="redelivered_ms",
        column_class=BigInt,
        params={"null": True, "default": None},
    )
    add_indexes(manager, INDEXES)
    return manager
