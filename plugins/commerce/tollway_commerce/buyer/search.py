"""Full-text search over the products of the merchants' feeds: the commerce_buyer_search
index (index, drop) and ranked, filtered queries (search).

A query means the same on SQLite (FTS5) and PostgreSQL (tsvector of the `simple`
configuration):
* words are runs of letters and digits, lowercased, diacritics removed; anything else only
  separates words, so no input reaches either engine as query syntax. Documents are
  normalised by the same function before either engine sees them.
* no stemming and no stop words (both engines index every word as it is), so the two
  databases agree on what matches without a shared word list;
* every word is required; the last also matches as a prefix when it has 3 characters or more;
* rank: each word scores 2 when it is in the title and 1 when in the description; best
  first, then the lower USDC price, then the product key in byte order: one order on both.
"""

from __future__ import annotations

from tollway import storage
from tollway.storage import fulltext

MAX_TERMS = 8
MAX_TERM_CHARS = 64
PREFIX_MIN = 3
MAX_FIELD_CHARS = 20_000
PARTS = (("title", "A", 2), ("description", "B", 1))  # FTS5 column, tsvector label, points


def document(text: str | None) -> str:
    return fulltext.document(text, max_chars=MAX_FIELD_CHARS)


def query_terms(q: str) -> list[str]:
    return fulltext.query_terms(q, max_terms=MAX_TERMS, max_term_chars=MAX_TERM_CHARS)


_DROP = storage.statement("DELETE FROM commerce_buyer_search WHERE product_key = {}")
_INSERT_FTS5 = storage.statement(
    "INSERT INTO commerce_buyer_search (product_key, title, description) VALUES ({}, {}, {})"
)
_UPSERT_TSVECTOR = storage.statement(
    "INSERT INTO commerce_buyer_search (product_key, document) VALUES ({}, "
    "setweight(to_tsvector('simple', CAST({} AS text)), 'A') || setweight(to_tsvector('simple', CAST({} AS text)), 'B')) "
    "ON CONFLICT (product_key) DO UPDATE SET document = EXCLUDED.document"
)


async def index(key: str, title: str, description: str) -> None:
    """(Re)write one product's search entry, in the caller's transaction."""
    if storage.on_postgres():
        await _UPSERT_TSVECTOR.execute(key, document(title), document(description))
        return
    await _DROP.execute(key)
    await _INSERT_FTS5.execute(key, document(title), document(description))


async def drop(key: str) -> None:
    await _DROP.execute(key)


# The filters, the same on both engines: merchant (NULL: any), in stock only (1) or not (0),
# the USDC range (NULL: unbounded; a bound leaves out products without an equivalent).
_FILTERS = (
    "p.merchant_id = COALESCE({}, p.merchant_id) AND (p.available = TRUE OR {} = 0) "
    "AND (CAST({} AS BIGINT) IS NULL OR p.usdc_micro >= {}) AND (CAST({} AS BIGINT) IS NULL OR p.usdc_micro <= {})"
)
_FROM_FTS5 = (
    "FROM commerce_buyer_search s JOIN commerce_buyer_products p ON p.id = s.product_key "
    "WHERE s.commerce_buyer_search MATCH {} AND " + _FILTERS
)
_PAGE_FTS5 = storage.statement(
    "WITH hit AS (SELECT f.rowid AS doc, SUM(json_extract(h.value, '$[0]')) AS score FROM json_each({}) h "
    "JOIN commerce_buyer_search f ON f.commerce_buyer_search MATCH json_extract(h.value, '$[1]') GROUP BY f.rowid) "
    "SELECT p.id AS id, COALESCE(hit.score, 0) AS score, count(*) OVER () AS total FROM commerce_buyer_search s "
    "JOIN commerce_buyer_products p ON p.id = s.product_key LEFT JOIN hit ON hit.doc = s.rowid "
    "WHERE s.commerce_buyer_search MATCH {} AND "
    + _FILTERS
    + " ORDER BY score DESC, p.usdc_micro IS NULL, p.usdc_micro, p.id LIMIT {} OFFSET {}"
)
_FROM_TSVECTOR = (
    "FROM commerce_buyer_search s JOIN commerce_buyer_products p ON p.id = s.product_key "
    "WHERE s.document @@ to_tsquery('simple', {}) AND " + _FILTERS
)
_PAGE_TSVECTOR = storage.statement(
    "WITH h AS MATERIALIZED (SELECT h.points, to_tsquery('simple', h.q) AS q "
    "FROM json_to_recordset(CAST({} AS json)) AS h(points int, q text)) "
    "SELECT p.id AS id, (SELECT COALESCE(SUM(h.points), 0) FROM h WHERE s.document @@ h.q) AS score, "
    "count(*) OVER () AS total "
    + _FROM_TSVECTOR
    + ' ORDER BY score DESC, p.usdc_micro IS NULL, p.usdc_micro, p.id COLLATE "C" LIMIT {} OFFSET {}'
)


async def search(
    q: str,
    *,
    merchant: str | None = None,
    in_stock: bool = False,
    min_usdc: int | None = None,
    max_usdc: int | None = None,
    limit: int = 10,
    offset: int = 0,
) -> tuple[list[str], int]:
    """Keys of the products matching `q` and the filters, best first, and how many match in all."""
    terms = query_terms(q)
    if not terms:
        return [], 0
    everything, hits = fulltext.scored_query(terms, PARTS, prefix_min=PREFIX_MIN, postgres=storage.on_postgres())
    page = _PAGE_TSVECTOR if storage.on_postgres() else _PAGE_FTS5
    filters = (merchant, 1 if in_stock else 0, min_usdc, min_usdc, max_usdc, max_usdc)
    found = await page.rows(hits, everything, *filters, limit, offset)
    if not found and offset > 0:  # past the end: the first row still says how many match
        found = [{"total": r["total"]} for r in await page.rows(hits, everything, *filters, 1, 0)]
        return [], int(found[0]["total"]) if found else 0
    return [r["id"] for r in found], int(found[0]["total"]) if found else 0
