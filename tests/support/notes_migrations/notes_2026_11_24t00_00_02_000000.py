"""notes 3: a data migration: notes written before `tag` existed are tagged 'early'
(needs the column of notes 2; a note written after this ran keeps its NULL)."""

from piccolo.engine import engine_finder

import tollway

ID = "2026-11-24T00:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "tag the notes written before tags"


async def _tag_early_notes() -> None:
    await engine_finder().run_ddl("UPDATE tw_test_notes SET tag = 'early' WHERE tag IS NULL")


async def forwards() -> tollway.MigrationManager:
    manager = tollway.MigrationManager(migration_id=ID, app_name="notes", description=DESCRIPTION)
    manager.add_raw(_tag_early_notes)
    return manager
