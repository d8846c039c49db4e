"""Kernel migration 4: the composite indexes of history, watches and their deliveries
(docs/history.md shows the query plan each one serves)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.engine import engine_finder

ID = "2026-11-24T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "indexes of the history and watch read paths"

# The read paths' composite indexes (docs/history.md shows each query's plan).
INDEXES = (
    # Changes: one entity's series in order, and the day of its first record.
    "CREATE INDEX IF NOT EXISTS tw_facts_series ON tw_facts (attribute, entity_key, owner, source, id)",
    # Recording and source polls: the one head of a series.
    "CREATE UNIQUE INDEX IF NOT EXISTS tw_fact_heads_series ON tw_fact_heads (attribute, entity_key, source, owner)",
    # Benchmark: one number per entity and field; peers read in number order.
    "CREATE UNIQUE INDEX IF NOT EXISTS tw_fact_numbers_entity ON tw_fact_numbers (attribute, source, entity_key, field)",
    "CREATE INDEX IF NOT EXISTS tw_fact_numbers_field ON tw_fact_numbers (attribute, field, number)",
    "CREATE INDEX IF NOT EXISTS tw_fact_numbers_peer_1 ON tw_fact_numbers (attribute, field, peer_1, peer_2, number)",
    "CREATE INDEX IF NOT EXISTS tw_fact_numbers_peer_2 ON tw_fact_numbers (attribute, field, peer_2, number)",
    # Source polls: the watches of one entity.
    "CREATE INDEX IF NOT EXISTS tw_watches_entity ON tw_watches (attribute, entity_key)",
    # Delivery: each change once per watch, and a watch's pending changes in order.
    "CREATE UNIQUE INDEX IF NOT EXISTS tw_watch_deliveries_change ON tw_watch_deliveries (watch_id, change_ref)",
    "CREATE INDEX IF NOT EXISTS tw_watch_deliveries_queue ON tw_watch_deliveries (state, watch_id, seq)",
)


async def _indexes() -> None:
    engine = engine_finder()
    for statement in INDEXES:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
