"""The fourth migration of core/receipts: the figure columns of receipts issued before the
third, filled from their bodies (raw statements run before a migration's columns are added,
so this comes after the third)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T06:00:04:000000"
VERSION = "1.38.0"
DESCRIPTION = "receipts' figure columns filled"

FILL = {
    "sqlite": "UPDATE tw_receipts SET payment_method = json_extract(body, '$.payment_method'), "
    "execution_status = json_extract(body, '$.execution_status') WHERE payment_method IS NULL",
    "postgres": "UPDATE tw_receipts SET payment_method = body::json ->> 'payment_method', "
    "execution_status = body::json ->> 'execution_status' WHERE payment_method IS NULL",
}


async def _fill() -> None:
    engine = engine_finder()
    await engine.run_ddl(FILL[engine.engine_type])


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_receipts", description=DESCRIPTION)
    manager.add_raw(_fill)
    return manager
