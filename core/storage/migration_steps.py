"""What migrations share: making tables from a frozen description of their columns (the
kernel's, and plugins' through `tollway.storage.add_tables`), adding indexes by raw DDL and
rebuilding a table on SQLite alone. Written once and never changed in meaning, since
released migrations call it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Column
from piccolo.engine import engine_finder
from piccolo.querystring import QueryString

ColumnSpecs = (
    Mapping[str, tuple[type[Column], Mapping[str, object]]]  # {name: (column class, parameters)}
    | Iterable[tuple[str, type[Column], Mapping[str, object]]]  # ((name, column class, parameters), ...)
)
# A table's definition as SQLite keeps it (the rebuild's check of what it already is)
_SQLITE_TABLE_SQL = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = {}"

# tablename -> (class name, its columns); parameters are those other than the column's defaults
TableSpec = Mapping[str, tuple[str, ColumnSpecs]]


def add_tables(manager: MigrationManager, tables: TableSpec) -> None:
    """Add each table of `tables` to `manager`, its columns in the order given."""
    for tablename, (class_name, columns) in tables.items():
        manager.add_table(class_name=class_name, tablename=tablename)
        named = ((n, c, p) for n, (c, p) in columns.items()) if isinstance(columns, Mapping) else columns
        add_columns(manager, tablename, class_name, named)


def add_columns(
    manager: MigrationManager,
    tablename: str,
    class_name: str,
    columns: Iterable[tuple[str, type[Column], Mapping[str, object]]],
) -> None:
    """Add `columns` ((name, column class, parameters), ...) to an existing table, in order."""
    for name, column_class, params in columns:
        manager.add_column(
            table_class_name=class_name,
            tablename=tablename,
            column_name=name,
            db_column_name=name,
            column_class=column_class,
            params=dict(params),
        )


def add_indexes(manager: MigrationManager, statements: Iterable[str]) -> None:
    """Run each statement of `statements` (`CREATE INDEX IF NOT EXISTS ...`, so idempotent) as
    the migration's raw DDL: raw DDL runs before the migration's own tables are made, so the
    indexed tables are those of earlier migrations."""
    run_ddl(manager, statements)


def drop_column_index(
    manager: MigrationManager, tablename: str, class_name: str, column: str, column_class: type[Column]
) -> None:
    """Drop the index a column declared with `index=True` had (`DROP INDEX IF EXISTS
    <table>_<column>`), recorded as Piccolo's own column change so its differ sees the column unindexed."""
    manager.alter_column(
        table_class_name=class_name,
        tablename=tablename,
        column_name=column,
        db_column_name=column,
        params={"index": False},
        old_params={"index": True},
        column_class=column_class,
        old_column_class=column_class,
    )


def run_ddl(manager: MigrationManager, statements: Iterable[str]) -> None:
    """Run each statement of `statements` (idempotent DDL: `CREATE INDEX IF NOT EXISTS`,
    `DROP INDEX IF EXISTS`) as the migration's raw DDL, in order, on tables of earlier migrations."""
    frozen = tuple(statements)

    async def indexes() -> None:
        engine = engine_finder()
        for statement in frozen:
            await engine.run_ddl(statement)

    manager.add_raw(indexes)


def rebuild_on_sqlite(manager: MigrationManager, tablename: str, statements: Iterable[str], done_when: str) -> None:
    """On SQLite, rebuild `tablename` by `statements` (frozen DDL, in order: move the table
    aside, make it anew, copy its rows, drop the old one, make its indexes again), in the
    migration's transaction, so a failure leaves the table as it was. Skipped where the
    table's definition already contains `done_when` (e.g. `WITHOUT ROWID`), and on
    PostgreSQL, whose tables it does not concern."""
    frozen = tuple(statements)

    async def rebuild() -> None:
        engine = engine_finder()
        if engine.engine_type != "sqlite":
            return
        rows = await engine.run_querystring(QueryString(_SQLITE_TABLE_SQL, tablename))
        if rows and done_when in rows[0]["sql"]:
            return
        for statement in frozen:
            await engine.run_ddl(statement)

    manager.add_raw(rebuild)
