"""People migration 1: the opt-out list (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

from tollway import storage

ID = "2026-11-28T01:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "people_opt_outs"

_NULL = {"null": True, "default": None}
TABLES = {
    "people_opt_outs": (
        "OptOut",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("kind", Varchar, {"length": 16}),
            ("key", Varchar, {"length": 500, "unique": True}),
            ("email", Varchar, {"length": 320, **_NULL}),
            ("name", Varchar, {"length": 200, **_NULL}),
            ("company", Varchar, {"length": 200, **_NULL}),
            ("domain", Varchar, {"length": 253, **_NULL}),
            ("note", Text, _NULL),
            ("created_ms", BigInt, {}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="people", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    return manager
