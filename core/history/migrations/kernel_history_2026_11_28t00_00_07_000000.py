"""The first migration of core/history: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, BigSerial, Boolean, DoublePrecision, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:07:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: facts, fact heads, fact numbers"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_fact_heads": (
        "FactHead",
        {
            "id": (BigSerial, {"primary_key": True}),
            "attribute": (Varchar, {"length": 64}),
            "entity_key": (Varchar, {"length": 256}),
            "source": (Varchar, {"length": 120}),
            "owner": (Varchar, {"length": 36}),
            "value_hash": (Varchar, {"length": 64}),
            "listed": (Boolean, {"default": True}),
            "fact_id": (BigInt, {}),
        },
    ),
    "tw_facts": (
        "FactRecord",
        {
            "id": (BigSerial, {"primary_key": True}),
            "attribute": (Varchar, {"length": 64}),
            "entity_key": (Varchar, {"length": 256}),
            "source": (Varchar, {"length": 120}),
            "owner": (Varchar, {"length": 36}),
            "listed": (Boolean, {"default": True}),
            "value": (Text, {}),
            "value_hash": (Varchar, {"length": 64}),
            "as_of": (Varchar, {"length": 40, "default": None, "null": True}),
            "first_seen_ms": (BigInt, {}),
            "changed_on": (Varchar, {"length": 10}),
            "recorded_by": (Varchar, {"length": 36, "default": None, "null": True}),
        },
    ),
    "tw_fact_numbers": (
        "FactNumber",
        {
            "id": (BigSerial, {"primary_key": True}),
            "attribute": (Varchar, {"length": 64}),
            "source": (Varchar, {"length": 120}),
            "entity_key": (Varchar, {"length": 256}),
            "field": (Varchar, {"length": 64}),
            "number": (DoublePrecision, {}),
            "peer_1": (Varchar, {"length": 120, "default": None, "null": True}),
            "peer_2": (Varchar, {"length": 120, "default": None, "null": True}),
            "peer_3": (Varchar, {"length": 120, "default": None, "null": True}),
            "peer_4": (Varchar, {"length": 120, "default": None, "null": True}),
            "peer_5": (Varchar, {"length": 120, "default": None, "null": True}),
            "as_of": (Varchar, {"length": 40, "default": None, "null": True}),
            "updated_ms": (BigInt, {}),
            "peer_group": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_history", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
