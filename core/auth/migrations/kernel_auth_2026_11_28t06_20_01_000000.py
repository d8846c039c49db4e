"""core/auth's fourth migration: every access token issued before token ids existed gets
one (`at_` and 16 random hex digits), so the operator can revoke it too. Raw statements run
before a migration's columns are added, so this follows the one adding `token_id`.
Idempotent: it fills only ids still missing."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T06:20:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "ids for the access tokens issued before"

FILL = {
    "sqlite": "UPDATE tw_access_tokens SET token_id = 'at_' || lower(hex(randomblob(8))) WHERE token_id IS NULL",
    "postgres": (
        "UPDATE tw_access_tokens SET token_id = 'at_' || substr(md5(random()::text || token_hash), 1, 16) "
        "WHERE token_id IS NULL"
    ),
}


async def _fill() -> None:
    engine = engine_finder()
    await engine.run_ddl(FILL["postgres" if engine.engine_type == "postgres" else "sqlite"])


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_auth", description=DESCRIPTION)
    manager.add_raw(_fill)
    return manager
