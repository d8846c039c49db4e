"""Kernel migration 5: Benchmark's indexes lead with the source and carry `updated_ms`,
so one peer set is read from an index alone (docs/history.md shows the plans)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-24T00:00:02:000000"
VERSION = "1.38.0"
DESCRIPTION = "benchmark indexes by attribute, field and source"

# Migration 4's number indexes did not name the source (every Benchmark read filters on
# it) and made each peer's update time a table read: these replace them.
DROPPED = ("tw_fact_numbers_field", "tw_fact_numbers_peer_1", "tw_fact_numbers_peer_2")

# (name, key columns, covered columns). PostgreSQL covers with INCLUDE; SQLite, which has
# no INCLUDE, takes the covered columns as trailing key columns.
RANKS = (
    # every peer of a field, in number order: count, extremes, quartiles, below/equal counts
    ("tw_fact_numbers_rank", "attribute, field, source, number", "updated_ms"),
    # the same, filtered on the first peer field (and the second with it)
    ("tw_fact_numbers_rank_p1", "attribute, field, source, peer_1, peer_2, number", "updated_ms"),
    # filtered on the second peer field alone
    ("tw_fact_numbers_rank_p2", "attribute, field, source, peer_2, number", "updated_ms"),
)
# SQLite answers MIN/MAX of a column from an index ordered on it: the oldest and newest
# update among a field's peers without a scan (PostgreSQL reads them in its one aggregate).
SQLITE_ONLY = (
    "CREATE INDEX IF NOT EXISTS tw_fact_numbers_seen ON tw_fact_numbers (attribute, field, source, updated_ms)",
)


def statements(engine_type: str) -> list[str]:
    out = [f"DROP INDEX IF EXISTS {name}" for name in DROPPED]
    for name, key, covered in RANKS:
        if engine_type == "postgres":
            out.append(f"CREATE INDEX IF NOT EXISTS {name} ON tw_fact_numbers ({key}) INCLUDE ({covered})")
        else:
            out.append(f"CREATE INDEX IF NOT EXISTS {name} ON tw_fact_numbers ({key}, {covered})")
    if engine_type != "postgres":
        out.extend(SQLITE_ONLY)
    return out


async def _indexes() -> None:
    engine = engine_finder()
    for statement in statements(engine.engine_type):
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
