"""notes 1: the table, with an id and a body."""

from piccolo.columns import Text, Varchar

import tollway

ID = "2026-11-24T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "create tw_test_notes"


async def forwards() -> tollway.MigrationManager:
    manager = tollway.MigrationManager(migration_id=ID, app_name="notes", description=DESCRIPTION)
    manager.add_table(class_name="Note", tablename="tw_test_notes")
    manager.add_column(
        table_class_name="Note",
        tablename="tw_test_notes",
        column_name="id",
        db_column_name="id",
        column_class=Varchar,
        params={"length": 36, "primary_key": True},
    )
    manager.add_column(
        table_class_name="Note",
        tablename="tw_test_notes",
        column_name="body",
        db_column_name="body",
        column_class=Text,
        params={},
    )
    return manager
