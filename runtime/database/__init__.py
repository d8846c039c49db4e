"""Database: Piccolo engines for SQLite (embedded default) and PostgreSQL.

`Database.from_url` picks the engine, `connect()` opens it (and the asyncpg pool),
`create_tables()` creates the kernel's tables, `bind()` points every Piccolo
table at this engine. One database is bound per process at a time.
"""
from .database import Database, parse_database_url

__all__ = ["Database", "parse_database_url"]
