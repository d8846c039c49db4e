"""Email migration 2: an agent's inbox read newest first."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-26T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "the inbox's read path"


async def _indexes() -> None:
    await engine_finder().run_ddl(
        "CREATE INDEX IF NOT EXISTS email_inbox_agent ON email_inbox (agent_id, received_ms, id)"
    )


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="email", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
