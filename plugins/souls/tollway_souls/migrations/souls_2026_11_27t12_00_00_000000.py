"""Souls migration 4: the soul key's rotation and revocation times (keys.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt

ID = "2026-11-27T12:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "souls_agents.key_rotated_ms, key_revoked_ms"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="souls", description=DESCRIPTION)
    for name in ("key_rotated_ms", "key_revoked_ms"):
        manager.add_column(
            table_class_name="SoulAgent",
            tablename="souls_agents",
            column_name=name,
            db_column_name=name,
            column_class=BigInt,
            params={"null": True, "default": None},
        )
    return manager
