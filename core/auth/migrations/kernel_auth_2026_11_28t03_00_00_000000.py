"""core/auth's second migration: the fingerprints of the settings every process of a
deployment must share (`shared_settings.py`)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T03:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "shared settings' fingerprints"

TABLES = {
    "tw_shared_settings": (
        "SharedSetting",
        {
            "name": (Varchar, {"length": 64, "primary_key": True}),
            "fingerprint": (Varchar, {"length": 80}),
            "host": (Varchar, {"length": 255}),
            "recorded_ms": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_auth", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
