"""Commerce buyer migration 1: merchants, products, product changes, orders (a frozen copy
of buyer/tables.py), and the product search index.

The index is no Piccolo table. SQLite: an FTS5 table over title and description with the
plain unicode61 tokenizer. PostgreSQL: a tsvector per product (title weighted A,
description B) of the `simple` configuration, under a GIN index. Neither stems nor drops
stop words, so both match the same words (buyer/search.py)."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.engine import engine_finder

from tollway import storage

ID = "2026-11-27T18:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "commerce_buyer_merchants, commerce_buyer_products, commerce_buyer_product_changes, commerce_buyer_orders, commerce_buyer_search"

_NULL = {"null": True, "default": None}
TABLES = {
    "commerce_buyer_merchants": (
        "Merchant",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("name", Varchar, {"length": 200}),
            ("base_url", Text, {}),
            ("feed_url", Text, {}),
            ("acp_token", Text, {}),
            ("api_version", Varchar, {"length": 20}),
            ("signing_key", Text, _NULL),
            ("webhook_secret", Text, _NULL),
            ("feed_id", Text, _NULL),
            ("feed_updated_at", Text, _NULL),
            ("feed_read_ms", BigInt, _NULL),
            ("feed_tried_ms", BigInt, _NULL),
            ("feed_error", Text, _NULL),
            ("products", Integer, {"default": 0}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    "commerce_buyer_products": (
        "Product",
        (
            ("id", Varchar, {"length": 600, "primary_key": True}),
            ("merchant_id", Varchar, {"length": 64, "index": True}),
            ("product_id", Text, {}),
            ("variant_id", Text, {}),
            ("title", Text, {}),
            ("description", Text, {"default": ""}),
            ("url", Text, _NULL),
            ("image_url", Text, _NULL),
            ("price_minor", BigInt, _NULL),
            ("currency", Varchar, {"length": 3, **_NULL}),
            ("usdc_micro", BigInt, {**_NULL, "index": True}),
            ("available", Boolean, {"default": False}),
            ("availability", Varchar, {"length": 40, **_NULL}),
            ("seller", Text, _NULL),
            ("digest", Varchar, {"length": 64}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    "commerce_buyer_product_changes": (
        "ProductChange",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("merchant_id", Varchar, {"length": 64, "index": True}),
            ("variant_id", Text, {}),
            ("field", Varchar, {"length": 40}),
            ("before", Text, _NULL),
            ("after", Text, _NULL),
            ("feed_updated_at", Text, _NULL),
            ("changed_ms", BigInt, {"index": True}),
        ),
    ),
    "commerce_buyer_orders": (
        "Order",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("agent_id", Varchar, {"length": 36, "index": True}),
            ("receipt_id", Varchar, {"length": 40}),
            ("merchant_id", Varchar, {"length": 64}),
            ("state", Varchar, {"length": 20, "index": True}),
            ("request", Text, {}),
            ("max_total", BigInt, {}),
            ("fee", BigInt, {}),
            ("checkout_session_id", Text, {**_NULL, "index": True}),
            ("currency", Varchar, {"length": 3, **_NULL}),
            ("total_minor", BigInt, _NULL),
            ("spent", BigInt, _NULL),
            ("merchant_order_id", Text, _NULL),
            ("order_status", Varchar, {"length": 20, **_NULL}),
            ("permalink_url", Text, _NULL),
            ("refunds", Text, _NULL),
            ("error", Text, _NULL),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
}
SQLITE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS commerce_buyer_search USING fts5("
    "product_key UNINDEXED, title, description, tokenize='unicode61')",
)
POSTGRES = (
    "CREATE TABLE IF NOT EXISTS commerce_buyer_search (product_key varchar(600) PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS commerce_buyer_search_document ON commerce_buyer_search USING gin (document)",
)


async def _search_index() -> None:
    engine = engine_finder()
    for statement in POSTGRES if engine.engine_type == "postgres" else SQLITE:
        await engine.run_ddl(statement)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="commerce_buyer", description=DESCRIPTION)
    storage.add_tables(manager, TABLES)
    manager.add_raw(_search_index)
    return manager
