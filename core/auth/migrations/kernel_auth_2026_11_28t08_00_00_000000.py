"""core/auth's fifth migration: one page fewer per new payer. `tw_agents.wallet_address` was
declared both unique and indexed, so each agent row wrote two identical indexes; the
unique constraint's index serves every read by wallet, so the plain one goes. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Varchar

from tollway._core.storage.migration_steps import drop_column_index

ID = "2026-11-28T08:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_agents: drop the wallet index the unique constraint duplicates"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_auth", description=DESCRIPTION)
    drop_column_index(manager, "tw_agents", "Agent", "wallet_address", Varchar)
    return manager
