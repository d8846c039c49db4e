"""Browser migration 1: profiles, artifacts and the plugin's keys (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Bytea, Integer, Text, Varchar

from tollway import storage

ID = "2026-11-27T21:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "browser_profiles, browser_artifacts, browser_keys"

_NULL = {"null": True, "default": None}
TABLES = {
    "browser_profiles": (
        "Profile",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("agent_id", Varchar, {"length": 36, "index": True}),
            ("name", Varchar, {"length": 100}),
            ("state", Text, _NULL),
            ("created_ms", BigInt, {}),
            ("last_used_ms", BigInt, _NULL),
            ("held_by", Varchar, {"length": 40, **_NULL}),
            ("held_until_ms", BigInt, _NULL),
        ),
    ),
    "browser_artifacts": (
        "Artifact",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("request_id", Varchar, {"length": 40, "index": True}),
            ("agent_id", Varchar, {"length": 36}),
            ("number", Integer, {}),
            ("kind", Varchar, {"length": 20}),
            ("media_type", Varchar, {"length": 40}),
            ("body", Bytea, {}),
            ("created_ms", BigInt, {"index": True}),
        ),
    ),
    "browser_keys": (
        "BrowserKey",
        (
            ("name", Varchar, {"length": 40, "primary_key": True}),
            ("value", Text, {}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="browser", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    return manager
