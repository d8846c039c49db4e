"""Goals migration 2: the unique keys the routes rely on (a case key once per goal, an
event id once per goal, a step number once per session) and the read paths' indexes."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-26T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "unique keys and indexes of goals, cases, events and steps"

INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS goals_cases_key ON goals_cases (goal_id, case_key)",
    "CREATE INDEX IF NOT EXISTS goals_cases_opened ON goals_cases (goal_id, opened_ms, id)",
    "CREATE UNIQUE INDEX IF NOT EXISTS goals_events_id ON goals_events (goal_id, event_id)",
    "CREATE UNIQUE INDEX IF NOT EXISTS goals_steps_seq ON goals_steps (session_id, seq)",
    "CREATE INDEX IF NOT EXISTS goals_sessions_runnable ON goals_sessions (status, lease_until_ms)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
