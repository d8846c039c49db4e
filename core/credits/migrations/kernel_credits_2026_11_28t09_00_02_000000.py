"""A later migration of core/credits: on SQLite, the ledger becomes a `WITHOUT ROWID` table,
its rows kept in the order of their id (time-ordered since `sorted_id`), so a new row is
one entry of one b-tree where it was a row of the table and an entry of its primary key's
index: a page fewer per credits call (docs/performance.md, "Pages a credits call writes").
Its columns, constraints and indexes are those it had. PostgreSQL's tables are heaps:
nothing changes there. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager

from tollway._core.storage.migration_steps import rebuild_on_sqlite

ID = "2026-11-28T09:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "ledger: WITHOUT ROWID on SQLite"

REBUILD = (
    "ALTER TABLE tw_ledger RENAME TO tw_ledger_rowid",
    'CREATE TABLE "tw_ledger" ("id" VARCHAR(40) PRIMARY KEY NOT NULL DEFAULT \'\', '
    '"account" VARCHAR(80) NOT NULL DEFAULT \'\', "delta" INTEGER NOT NULL DEFAULT 0, '
    '"balance_after" INTEGER NOT NULL DEFAULT 0, "kind" VARCHAR(24) NOT NULL DEFAULT \'\', '
    '"reference" VARCHAR(120) DEFAULT null, "memo" TEXT DEFAULT null, '
    '"created_ms" INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID',
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT id, account, delta, balance_after, kind, reference, memo, created_ms FROM tw_ledger_rowid",
    "DROP TABLE tw_ledger_rowid",
    'CREATE INDEX tw_ledger_reference ON "tw_ledger" ("reference")',
    "CREATE INDEX tw_ledger_account_newest ON tw_ledger (account, created_ms, id)",
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_credits", description=DESCRIPTION)
    rebuild_on_sqlite(manager, "tw_ledger", REBUILD, done_when="WITHOUT ROWID")
    return manager
