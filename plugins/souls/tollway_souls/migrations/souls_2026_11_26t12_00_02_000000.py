"""Souls migration 3: the full-text search index (search.py), one document per soul.

SQLite: an FTS5 table, one column per weighted part, stemmed by the porter tokenizer.
PostgreSQL: a tsvector per soul (services weighted A, names B, soul_md C) under a GIN index.
Both are filled by `tollway_souls.search.reindex`; the plugin's first release ships this
migration with the tables, so there are no souls to backfill.
"""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-26T12:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "souls_search full-text index"

SQLITE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS souls_search USING fts5("
    "soul_id UNINDEXED, name, display_name, soul_md, services, tokenize='porter unicode61')",
)
POSTGRES = (
    "CREATE TABLE IF NOT EXISTS souls_search (soul_id varchar(40) PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS souls_search_document ON souls_search USING gin (document)",
)


async def _search_index() -> None:
    engine = engine_finder()
    for statement in POSTGRES if engine.engine_type == "postgres" else SQLITE:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="souls", description=DESCRIPTION)
    manager.add_raw(_search_index)
    return manager
