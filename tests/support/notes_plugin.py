"""A plugin with a table of its own, for the migration tests: `tw_test_notes`,
declared as the Piccolo app `notes` whose migrations are in notes_migrations/
(create the table; add a nullable, indexed column; fill it in old rows)."""

from __future__ import annotations

from pathlib import Path

from piccolo.columns import Text, Varchar
from piccolo.table import Table

import tollway

MIGRATIONS = Path(__file__).parent / "notes_migrations"


class Note(Table, tablename="tw_test_notes"):
    id = Varchar(length=36, primary_key=True)
    body = Text()
    tag = Varchar(length=16, null=True, default=None, index=True)


def notes_app(folder: Path = MIGRATIONS) -> tollway.AppConfig:
    return tollway.AppConfig(app_name="notes", migrations_folder_path=folder, table_classes=[Note])


class NotesPlugin:
    def __init__(self, folder: Path = MIGRATIONS) -> None:
        self.folder = folder

    @tollway.hookimpl
    def register_migrations(self, register):
        register(notes_app(self.folder))
