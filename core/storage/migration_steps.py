"""What the kernel's migrations share: making tables from a frozen description of their
columns. Written once and never changed in meaning, since released migrations call it."""

from __future__ import annotations

from collections.abc import Mapping

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Column

# tablename -> (class name, {column name: (column class, parameters other than its defaults)})
TableSpec = Mapping[str, tuple[str, Mapping[str, tuple[type[Column], Mapping[str, object]]]]]


def add_tables(manager: MigrationManager, tables: TableSpec) -> None:
    """Add each table of `tables` to `manager`, its columns in the order given."""
    for tablename, (class_name, columns) in tables.items():
        manager.add_table(class_name=class_name, tablename=tablename)
        for name, (column_class, params) in columns.items():
            manager.add_column(
                table_class_name=class_name,
                tablename=tablename,
                column_name=name,
                db_column_name=name,
                column_class=column_class,
                params=dict(params),
            )
