"""The first migration of core/auth: its tables as they stood when each area came to own
them (as Piccolo's auto migrations wrote them). On a database made before, the tables are
already there and are adopted as they are."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Text, Varchar

from tollway._core.storage.migration_steps import add_tables

ID = "2026-11-28T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "the tables of the area: agents, access tokens, proof nonces"

# tablename -> (class name, {column: (column class, its parameters other than the defaults)})
TABLES = {
    "tw_access_tokens": (
        "AccessToken",
        {
            "token_hash": (Varchar, {"length": 64, "primary_key": True}),
            "agent_id": (Varchar, {"length": 36, "index": True}),
            "expires_ms": (BigInt, {}),
            "created_ms": (BigInt, {}),
            "origin": (Varchar, {"length": 16, "default": "operator"}),
        },
    ),
    "tw_proof_nonces": (
        "ProofNonce",
        {
            "id": (Varchar, {"length": 110, "primary_key": True}),
            "expires_ms": (BigInt, {"index": True}),
        },
    ),
    "tw_agents": (
        "Agent",
        {
            "id": (Varchar, {"length": 36, "primary_key": True}),
            "wallet_address": (Varchar, {"length": 42, "default": None, "null": True, "unique": True, "index": True}),
            "name": (Text, {"default": None, "null": True}),
            "credits": (BigInt, {}),
            "created_ms": (BigInt, {}),
        },
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_auth", description=DESCRIPTION)
    add_tables(manager, TABLES)
    return manager
