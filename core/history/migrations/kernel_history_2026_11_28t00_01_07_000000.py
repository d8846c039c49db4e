"""The second migration of core/history: indexes of the history read paths (raw DDL runs before a migration's
tables are made, so it comes after the first). Idempotent: a database made before
the areas owned their tables has it already."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-28T00:01:07:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the history read paths"


# The read paths' composite indexes (docs/history.md shows the plan each one serves).
INDEXES = (
    # Changes: one entity's series in order, and the day of its first record.
    "CREATE INDEX IF NOT EXISTS tw_facts_series ON tw_facts (attribute, entity_key, owner, source, id)",
    # Recording and source polls: the one head of a series.
    "CREATE UNIQUE INDEX IF NOT EXISTS tw_fact_heads_series ON tw_fact_heads (attribute, entity_key, source, owner)",
    # Benchmark: one number per entity and field.
    "CREATE UNIQUE INDEX IF NOT EXISTS tw_fact_numbers_entity ON tw_fact_numbers (attribute, source, entity_key, field)",
)
# Benchmark's peers in number order, by peer group: (name, key columns, covered columns).
# PostgreSQL covers with INCLUDE; SQLite, which has none, takes them as trailing keys.
GROUPS = (
    ("tw_fact_numbers_group", "peer_group, number", "updated_ms"),
    ("tw_fact_numbers_group_p1", "peer_group, peer_1, peer_2, number", "updated_ms"),
    ("tw_fact_numbers_group_p2", "peer_group, peer_2, number", "updated_ms"),
)
# SQLite answers MIN/MAX of the update times from an index ordered on them.
SQLITE_ONLY = ("CREATE INDEX IF NOT EXISTS tw_fact_numbers_group_seen ON tw_fact_numbers (peer_group, updated_ms)",)


async def _indexes() -> None:
    engine = engine_finder()
    postgres = engine.engine_type == "postgres"
    for statement in INDEXES:
        await engine.run_ddl(statement)
    for name, key, covered in GROUPS:
        columns = f"({key}) INCLUDE ({covered})" if postgres else f"({key}, {covered})"
        await engine.run_ddl(f"CREATE INDEX IF NOT EXISTS {name} ON tw_fact_numbers {columns}")
    if not postgres:
        for statement in SQLITE_ONLY:
            await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_history", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
