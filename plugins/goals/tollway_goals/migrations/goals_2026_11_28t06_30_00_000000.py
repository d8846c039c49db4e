"""Goals migration 7: the indexes of the operator page (the console's Goals): the latest
goals (by `seq`), the asks waiting for a person (by state, oldest first), and one goal's asks."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T06:30:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the operator page"

INDEXES = (
    "CREATE INDEX IF NOT EXISTS goals_goals_seq ON goals_goals (seq)",
    "CREATE INDEX IF NOT EXISTS goals_asks_waiting ON goals_asks (status, created_ms, id)",
    "CREATE INDEX IF NOT EXISTS goals_asks_goal ON goals_asks (goal_id, created_ms, id)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
