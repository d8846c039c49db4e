"""Database: Piccolo engines for SQLite (embedded default) and PostgreSQL.

`Database.from_url` picks the engine, `connect()` opens it (and the asyncpg pool),
`migrate()` applies the pending schema migrations (docs/storage.md), `bind()`
points every Piccolo table at this engine. One database is bound per process at
a time.
"""

from tollway._runtime.database.database import Database, parse_database_url
from tollway._runtime.database.migrations import MigrationError

__all__ = ["Database", "MigrationError", "parse_database_url"]
