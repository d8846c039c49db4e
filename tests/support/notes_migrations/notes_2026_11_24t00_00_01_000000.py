"""notes 2: a nullable, indexed `tag` column (needs the table of notes 1)."""

from piccolo.columns import Varchar

import tollway

ID = "2026-11-24T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "add tw_test_notes.tag"


async def forwards() -> tollway.MigrationManager:
    manager = tollway.MigrationManager(migration_id=ID, app_name="notes", description=DESCRIPTION)
    manager.add_column(
        table_class_name="Note",
        tablename="tw_test_notes",
        column_name="tag",
        db_column_name="tag",
        column_class=Varchar,
        params={"length": 16, "null": True, "default": None, "index": True},
    )
    return manager
