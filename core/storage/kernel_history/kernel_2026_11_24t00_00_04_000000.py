"""Kernel migration 7: `peer_group` filled for the numbers already kept, and Benchmark's
indexes keyed on it instead of the three strings: a third the size, so a peer set of
100,000 is read in a third of the time (docs/history.md shows the plans)."""

import hashlib

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder
from piccolo.querystring import QueryString

ID = "2026-11-24T00:00:04:000000"
VERSION = "1.38.0"
DESCRIPTION = "benchmark indexes by peer group"

DROPPED = ("tw_fact_numbers_rank", "tw_fact_numbers_rank_p1", "tw_fact_numbers_rank_p2", "tw_fact_numbers_seen")
# (name, key columns, covered columns); SQLite, which has no INCLUDE, takes the covered
# columns as trailing key columns.
GROUPS = (
    ("tw_fact_numbers_group", "peer_group, number", "updated_ms"),
    ("tw_fact_numbers_group_p1", "peer_group, peer_1, peer_2, number", "updated_ms"),
    ("tw_fact_numbers_group_p2", "peer_group, peer_2, number", "updated_ms"),
)
# Each series' group, its values bound (never formatted into the text).
_FILL = "UPDATE tw_fact_numbers SET peer_group = {} WHERE attribute = {} AND field = {} AND source = {}"
# SQLite answers MIN/MAX of the update times from an index ordered on them.
SQLITE_ONLY = ("CREATE INDEX IF NOT EXISTS tw_fact_numbers_group_seen ON tw_fact_numbers (peer_group, updated_ms)",)


def _group(attribute: str, field: str, source: str) -> int:
    """As core.history.declare.peer_group computes it (frozen here: a migration never changes)."""
    digest = hashlib.sha256("\x1f".join((attribute, field, source)).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def _fill_and_index() -> None:
    engine = engine_finder()
    for row in await engine.run_ddl("SELECT DISTINCT attribute, field, source FROM tw_fact_numbers"):
        group = _group(row["attribute"], row["field"], row["source"])
        await engine.run_querystring(QueryString(_FILL, group, row["attribute"], row["field"], row["source"]))
    for name in DROPPED:
        await engine.run_ddl(f"DROP INDEX IF EXISTS {name}")
    for name, key, covered in GROUPS:
        if engine.engine_type == "postgres":
            await engine.run_ddl(f"CREATE INDEX IF NOT EXISTS {name} ON tw_fact_numbers ({key}) INCLUDE ({covered})")
        else:
            await engine.run_ddl(f"CREATE INDEX IF NOT EXISTS {name} ON tw_fact_numbers ({key}, {covered})")
    if engine.engine_type != "postgres":
        for statement in SQLITE_ONLY:
            await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_raw(_fill_and_index)
    return manager
