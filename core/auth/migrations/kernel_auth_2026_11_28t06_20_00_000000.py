"""core/auth's third migration: access tokens get a public id (`token_id`, what the
operator console lists and revokes them by) and a revocation time (`revoked_ms`)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Varchar

ID = "2026-11-28T06:20:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_access_tokens.token_id and revoked_ms"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_auth", description=DESCRIPTION)
    for name, column_class, params in (
        ("token_id", Varchar, {"length": 24, "null": True, "default": None}),
        ("revoked_ms", BigInt, {"null": True, "default": None}),
    ):
        manager.add_column(
            table_class_name="AccessToken",
            tablename="tw_access_tokens",
            column_name=name,
            db_column_name=name,
            column_class=column_class,
            params=params,
        )
    return manager
