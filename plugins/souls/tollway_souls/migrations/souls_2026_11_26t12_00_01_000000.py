"""Souls migration 2: the unique keys the marketplace relies on (a service slug once per
soul, one rating per buyer per service)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-26T12:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "unique service slugs and ratings"

INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS souls_services_slug ON souls_services (soul_id, slug)",
    "CREATE UNIQUE INDEX IF NOT EXISTS souls_ratings_buyer ON souls_ratings (service_id, buyer_agent_id)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="souls", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
