"""The second migration of core/messages: one index of each agent's notifications, newest
first (agent_id, created_ms, seq), replaces the two single-column ones (agent_id, created_ms).
It serves the one read of the table, an agent's listing newest first, without sorting, and
every completed or failed job writes one index entry fewer. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Varchar

from tollway._core.storage.migration_steps import drop_column_index, run_ddl

ID = "2026-11-28T10:00:05:000000"
VERSION = "1.38.0"
DESCRIPTION = "notifications: one index of each agent's, newest first"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_messages", description=DESCRIPTION)
    for column, column_class in (("agent_id", Varchar), ("created_ms", BigInt)):
        drop_column_index(manager, "tw_notifications", "Notification", column, column_class)
    run_ddl(
        manager,
        ("CREATE INDEX IF NOT EXISTS tw_notifications_agent_newest ON tw_notifications (agent_id, created_ms, seq)",),
    )
    return manager
