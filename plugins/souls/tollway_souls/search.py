"""Full-text search over souls: the souls_search index (reindex) and ranked queries (search)."""

from __future__ import annotations

from tollway import storage
from tollway.storage import fulltext

from .tables import SoulAgent, SoulService

# What a query means, the same on SQLite (FTS5) and PostgreSQL (tsvector):
# * words are runs of letters and digits, lowercased with diacritics removed; everything
#   else (quotes, operators, `*:^()-`, column filters) only separates words, so no input
#   reaches either engine as query syntax. Documents are normalised by the same function
#   before either engine sees them, so both tokenise the same plain words.
# * English stop words (PostgreSQL's list) are dropped from documents and queries alike.
# * every word is required (AND); the last one also matches as a prefix when it has at
#   least PREFIX_MIN characters ("transl" finds "translation"). Words are stemmed by the
#   engines (FTS5 porter, PostgreSQL english): "translating" finds "translation".
# * rank: each query word scores 4 if it occurs in the soul's enabled services (title,
#   description, slug), plus 2 in its name or display name, plus 1 in its soul_md; a soul's
#   score is the sum over the words, best first, ties by slug. A services hit (4) outranks
#   a name and soul_md hit together (3). The score is counted, not estimated (bm25 and
#   ts_rank weigh frequency and length differently), so both databases give one order.
STOP_WORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "should",
        "now",
    ]
)
MAX_TERMS = 8  # words of a query beyond these are ignored
MAX_TERM_CHARS = 64  # longer "words" are noise and are ignored
PREFIX_MIN = 3
MAX_FIELD_CHARS = 100_000  # of each indexed text (PostgreSQL caps a tsvector at 1 MB)
# (FTS5 column filter, tsvector weight label, score) of each weighted part of a document
PARTS = (("services", "A", 4), ("{name display_name}", "B", 2), ("soul_md", "C", 1))


def words(text: str) -> list[str]:
    """The words of `text` as the index sees them (see above), stop words dropped."""
    return fulltext.words(text, STOP_WORDS)


def _document(text: str | None) -> str:
    return fulltext.document(text, max_chars=MAX_FIELD_CHARS, stop_words=STOP_WORDS)


def query_terms(q: str) -> list[str]:
    """The distinct words of a query that take part in it, in order."""
    return fulltext.query_terms(q, max_terms=MAX_TERMS, max_term_chars=MAX_TERM_CHARS, stop_words=STOP_WORDS)


# The index's statements. The index is no Piccolo table: an FTS5 virtual table on SQLite,
# a tsvector column on PostgreSQL (the souls migrations).
_DROP = storage.statement("DELETE FROM souls_search WHERE soul_id = {}")
_INSERT_FTS5 = storage.statement(
    "INSERT INTO souls_search (soul_id, name, display_name, soul_md, services) VALUES ({}, {}, {}, {}, {})"
)
_UPSERT_TSVECTOR = storage.statement(
    "INSERT INTO souls_search (soul_id, document) VALUES ({}, "
    "setweight(to_tsvector('english', CAST({} AS text)), 'A') || "
    "setweight(to_tsvector('english', CAST({} AS text)), 'B') || "
    "setweight(to_tsvector('english', CAST({} AS text)), 'C')) "
    "ON CONFLICT (soul_id) DO UPDATE SET document = EXCLUDED.document"
)


async def reindex(soul_id: str) -> None:
    """(Re)build the search document of one soul from its row and its enabled services, or
    drop it from the index when the soul is gone. Runs in the caller's transaction if any."""
    soul = (
        await SoulAgent.select(SoulAgent.name, SoulAgent.display_name, SoulAgent.soul_md)
        .where(SoulAgent.id == soul_id)
        .first()
    )
    if soul is None:
        await _DROP.execute(soul_id)
        return
    found = (
        await SoulService.select(SoulService.slug, SoulService.title, SoulService.description)
        .where(
            (SoulService.soul_id == soul_id) & (SoulService.enabled == True)  # noqa: E712 (a column comparison, not a truth test)
        )
        .order_by(SoulService.slug)
    )
    services = _document(" ".join(f"{s['title']} {s['description'] or ''} {s['slug']}" for s in found))
    name, display_name, soul_md = _document(soul["name"]), _document(soul["display_name"]), _document(soul["soul_md"])
    if storage.on_postgres():
        await _UPSERT_TSVECTOR.execute(soul_id, services, f"{name} {display_name}", soul_md)
        return
    async with storage.transaction():  # FTS5 has no upsert: replace the row atomically
        await _DROP.execute(soul_id)
        await _INSERT_FTS5.execute(soul_id, name, display_name, soul_md, services)


# A query's statements, one count and one page per engine. Each takes the query of every
# word (the match) and the category (NULL: all); the page also takes its hits as one JSON
# list (each the points and the query of one word in one part), summed per soul into its score.
_FROM_FTS5 = "FROM souls_search s JOIN souls_agents a ON a.id = s.soul_id WHERE s.souls_search MATCH {} AND a.category = COALESCE({}, a.category)"
_COUNT_FTS5 = storage.statement("SELECT count(*) AS n " + _FROM_FTS5)
_PAGE_FTS5 = storage.statement(
    # each hit's query runs once against the index (a join, not a subquery per soul)
    "WITH hit AS (SELECT f.rowid AS doc, SUM(json_extract(h.value, '$[0]')) AS score FROM json_each({}) h "
    "JOIN souls_search f ON f.souls_search MATCH json_extract(h.value, '$[1]') GROUP BY f.rowid) "
    "SELECT a.id AS id, COALESCE(hit.score, 0) AS score FROM souls_search s JOIN souls_agents a ON a.id = s.soul_id "
    "LEFT JOIN hit ON hit.doc = s.rowid WHERE s.souls_search MATCH {} AND a.category = COALESCE({}, a.category) "
    "ORDER BY score DESC, a.slug LIMIT {} OFFSET {}"
)
_FROM_TSVECTOR = (
    "FROM souls_search s JOIN souls_agents a ON a.id = s.soul_id "
    "WHERE s.document @@ to_tsquery('english', {}) AND a.category = COALESCE({}, a.category)"
)
_COUNT_TSVECTOR = storage.statement("SELECT count(*) AS n " + _FROM_TSVECTOR)
_PAGE_TSVECTOR = storage.statement(
    # each hit's tsquery is made once, then each matching soul's document is checked against
    # it; slugs in byte order, as SQLite's, whatever the database's locale
    "WITH h AS MATERIALIZED (SELECT h.points, to_tsquery('english', h.q) AS q FROM json_to_recordset(CAST({} AS json)) AS h(points int, q text)) "
    "SELECT a.id AS id, (SELECT COALESCE(SUM(h.points), 0) FROM h WHERE s.document @@ h.q) AS score "
    + _FROM_TSVECTOR
    + ' ORDER BY score DESC, a.slug COLLATE "C" LIMIT {} OFFSET {}'
)


async def search(q: str, *, category: str | None = None, limit: int = 20, offset: int = 0) -> tuple[list[str], int]:
    """Ids of the souls matching `q` (optionally only of `category`), best first, at most
    `limit` from `offset`, and how many match in all. A query with no words matches nothing."""
    terms = query_terms(q)
    if not terms:
        return [], 0
    everything, hits = fulltext.scored_query(terms, PARTS, prefix_min=PREFIX_MIN, postgres=storage.on_postgres())
    count, page = (_COUNT_TSVECTOR, _PAGE_TSVECTOR) if storage.on_postgres() else (_COUNT_FTS5, _PAGE_FTS5)
    counted = await count.row(everything, category)
    total = int(counted["n"]) if counted else 0
    if not total or limit <= 0 or offset >= total:
        return [], total
    found = await page.rows(hits, everything, category, limit, max(offset, 0))
    return [r["id"] for r in found], total
