"""Souls migration 1: soul agents, services, orders and ratings (a frozen copy of tables.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar

ID = "2026-11-26T12:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "souls_agents, souls_services, souls_orders, souls_ratings"

_NULL = {"null": True, "default": None}
TABLES = {
    "souls_agents": (
        "SoulAgent",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("agent_id", Varchar, {"length": 36, "unique": True}),
            ("wallet_address", Varchar, {"length": 42, **_NULL}),
            ("slug", Varchar, {"length": 64, "unique": True}),
            ("name", Varchar, {"length": 100}),
            ("display_name", Varchar, {"length": 100}),
            ("category", Varchar, {"length": 40, "index": True}),
            ("soul_md", Text, {"default": ""}),
            ("avatar_url", Text, _NULL),
            ("key_hash", Varchar, {"length": 64, "unique": True}),
            ("webhook_url", Text, _NULL),
            ("webhook_secret", Text, _NULL),
            ("rating_sum", BigInt, {"default": 0}),
            ("rating_count", Integer, {"default": 0}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    "souls_services": (
        "SoulService",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("soul_id", Varchar, {"length": 40, "index": True}),
            ("slug", Varchar, {"length": 64}),
            ("title", Varchar, {"length": 120}),
            ("description", Text, {"default": ""}),
            ("price", BigInt, {}),
            ("category", Varchar, {"length": 40}),
            ("enabled", Boolean, {"default": True}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    "souls_orders": (
        "SoulOrder",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("soul_id", Varchar, {"length": 40, "index": True}),
            ("service_id", Varchar, {"length": 40}),
            ("buyer_agent_id", Varchar, {"length": 36, "index": True}),
            ("receipt_id", Varchar, {"length": 40}),
            ("price", BigInt, {}),
            ("share", BigInt, {}),
            ("request", Text, {}),
            ("state", Varchar, {"length": 12, "index": True}),
            ("result", Text, _NULL),
            ("note", Text, _NULL),
            ("deadline_ms", BigInt, {"index": True}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    "souls_ratings": (
        "SoulRating",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("soul_id", Varchar, {"length": 40, "index": True}),
            ("service_id", Varchar, {"length": 40}),
            ("buyer_agent_id", Varchar, {"length": 36}),
            ("stars", Integer, {}),
            ("comment", Text, _NULL),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
}


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="souls", description=DESCRIPTION)
    for tablename, (class_name, columns) in TABLES.items():
        manager.add_table(class_name=class_name, tablename=tablename)
        for name, column, params in columns:
            manager.add_column(
                table_class_name=class_name,
                tablename=tablename,
                column_name=name,
                db_column_name=name,
                column_class=column,
                params=params,
            )
    return manager
