"""Goals migration 5: how a goal ended (when, and what of its budget went back once no step
was in flight) and the slice last given to a case (its spending cap stays in `budget`)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt

ID = "2026-11-27T11:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "goals_goals.ended_ms, goals_goals.returned, goals_cases.slice_given"

_NULL = {"null": True, "default": None}
COLUMNS = (
    ("Goal", "goals_goals", "ended_ms", BigInt, _NULL),
    ("Goal", "goals_goals", "returned", BigInt, _NULL),
    ("Case", "goals_cases", "slice_given", BigInt, _NULL),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    for class_name, tablename, name, column, params in COLUMNS:
        manager.add_column(
            table_class_name=class_name,
            tablename=tablename,
            column_name=name,
            db_column_name=name,
            column_class=column,
            params=params,
        )
    return manager
