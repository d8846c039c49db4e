"""A later migration of core/payments: on SQLite, `tw_quotes` (the paid quotes' records)
becomes a `WITHOUT ROWID` table keyed by the quote id, so recording a paid quote writes one
b-tree where it wrote the table and its primary key's index (2.4 pages per insert, 1.9
after, docs/performance.md). Its columns and constraints are those it had. PostgreSQL's
tables are heaps: nothing changes there. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager

from tollway._core.storage.migration_steps import rebuild_on_sqlite

ID = "2026-11-28T09:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_quotes: WITHOUT ROWID on SQLite"

REBUILD = (
    "ALTER TABLE tw_quotes RENAME TO tw_quotes_rowid",
    'CREATE TABLE "tw_quotes" ("id" VARCHAR(40) PRIMARY KEY NOT NULL DEFAULT \'\', '
    "\"tool\" VARCHAR(64) NOT NULL DEFAULT '', \"input_hash\" VARCHAR(64) NOT NULL DEFAULT '', "
    '"amount" INTEGER NOT NULL DEFAULT 0, "pay_to" VARCHAR(42) NOT NULL DEFAULT \'\', '
    '"network" VARCHAR(32) NOT NULL DEFAULT \'\', "expires_ms" INTEGER NOT NULL DEFAULT 0, '
    '"used_ms" INTEGER DEFAULT null, "created_ms" INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID',
    "INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, used_ms, created_ms) "
    "SELECT id, tool, input_hash, amount, pay_to, network, expires_ms, used_ms, created_ms FROM tw_quotes_rowid",
    "DROP TABLE tw_quotes_rowid",
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_payments", description=DESCRIPTION)
    rebuild_on_sqlite(manager, "tw_quotes", REBUILD, done_when="WITHOUT ROWID")
    return manager
