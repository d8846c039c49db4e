"""Website migration 1: sites and their files (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Bytea, Integer, Text, Varchar

from tollway import storage

ID = "2026-11-28T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "website_sites, website_files"

_NULL = {"null": True, "default": None}
TABLES = {
    "website_sites": (
        "Site",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("agent_id", Varchar, {"length": 36, "index": True}),
            ("slug", Varchar, {"length": 64, "unique": True}),
            ("name", Varchar, {"length": 100}),
            ("brief", Text, {}),
            ("version", Integer, {}),
            ("request_id", Varchar, {"length": 40}),
            ("publication", Text, _NULL),
            ("domain", Varchar, {"length": 253, "index": True, **_NULL}),
            ("domain_expires_ms", BigInt, _NULL),
            ("domain_checked_ms", BigInt, _NULL),
            ("domain_warned_ms", BigInt, _NULL),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    "website_files": (
        "SiteFile",
        (
            ("id", Varchar, {"length": 80, "primary_key": True}),
            ("site_id", Varchar, {"length": 40, "index": True}),
            ("version", Integer, {}),
            ("path", Varchar, {"length": 200}),
            ("media_type", Varchar, {"length": 60}),
            ("body", Bytea, {}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="website", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    return manager
