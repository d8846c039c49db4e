"""Kernel migration 6: tw_fact_numbers gains `peer_group`, one number for (attribute,
field, source); the next migration fills it and keys Benchmark's indexes on it."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt

ID = "2026-11-24T00:00:03:000000"
VERSION = "1.38.0"
DESCRIPTION = "tw_fact_numbers.peer_group"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_column(
        table_class_name="FactNumber",
        tablename="tw_fact_numbers",
        column_name="peer_group",
        db_column_name="peer_group",
        column_class=BigInt,
        params={"default": 0},
    )
    return manager
