"""core/auth's sixth migration: on SQLite, `tw_agents` becomes a `WITHOUT ROWID` table keyed
by its id, so a credits call's balance read and conditional debit search one b-tree where
they searched the primary key's index and then the table, and a new payer's row is written
to two b-trees (the table, the unique wallet index) where it was three. Its columns and
constraints are those it had. PostgreSQL's tables are heaps: nothing changes there.
Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager

from tollway._core.storage.migration_steps import rebuild_on_sqlite

ID = "2026-11-28T09:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_agents: WITHOUT ROWID on SQLite"

REBUILD = (
    "ALTER TABLE tw_agents RENAME TO tw_agents_rowid",
    'CREATE TABLE "tw_agents" ("id" VARCHAR(36) PRIMARY KEY NOT NULL DEFAULT \'\', '
    '"wallet_address" VARCHAR(42) UNIQUE DEFAULT null, "name" TEXT DEFAULT null, '
    '"credits" INTEGER NOT NULL DEFAULT 0, "created_ms" INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID',
    "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) "
    "SELECT id, wallet_address, name, credits, created_ms FROM tw_agents_rowid",
    "DROP TABLE tw_agents_rowid",
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_auth", description=DESCRIPTION)
    rebuild_on_sqlite(manager, "tw_agents", REBUILD, done_when="WITHOUT ROWID")
    return manager
