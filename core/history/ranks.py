"""Benchmark's read path: the statistics of one peer set of tw_fact_numbers, computed
by the database from the number indexes (migrations 5 and 7), never by fetching the
peers. A peer set is one `peer_group` (attribute, field and source as one number) and
its peer filters.

PostgreSQL answers everything in one aggregate over an index-only scan (its
`percentile_cont` gives the quartiles). SQLite answers count, extremes and the
below/equal counts with index probes and range counts, then reads the two
neighbours of each quartile position with an ordered read at an OFFSET. Both
interpolate the same way: `low + t * (high - low)` at position `q * (count - 1)`,
numpy's default (`linear`) percentile method.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from piccolo.querystring import QueryString

from tollway._core.history.declare import MAX_PEER_FIELDS, peer_group
from tollway._core.history.keys import key_forms
from tollway._core.history.tables import FactNumber as F
from tollway._core.storage import sql

QUARTILES = (0.25, 0.5, 0.75)
PEER_COLUMNS = tuple(f"peer_{i}" for i in range(1, MAX_PEER_FIELDS + 1))
MAX_SOURCES_LISTED = 50


def peer_text(value: str | int | float) -> str:
    """A peer value as the fact store keeps it: text, trimmed, lower case (a whole
    number written 2021 or 2021.0 is "2021")."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()[:120]


@dataclasses.dataclass(frozen=True)
class PeerSet:
    """The entities compared: one field of one attribute from one source, filtered on
    peer columns (`filters`: (column, text) in column order)."""

    attribute: str
    field: str
    source: str
    filters: tuple[tuple[str, str], ...] = ()

    def where(self) -> Any:
        """The peer set's condition as Piccolo builds it from the columns: its `peer_group`,
        then each filter's peer column, in that order (`values()`)."""
        clause: Any = F.peer_group == peer_group(self.attribute, self.field, self.source)
        for column, text in self.filters:
            assert column in PEER_COLUMNS
            clause = clause & (F._meta.get_column_by_name(column) == text)
        return clause.querystring

    def values(self) -> tuple[object, ...]:
        """The values `where()` binds, in its order."""
        return (peer_group(self.attribute, self.field, self.source), *(text for _, text in self.filters))


@dataclasses.dataclass(frozen=True)
class Summary:
    count: int
    low: float | None
    high: float | None
    first_ms: int | None  # the oldest update among the peers
    last_ms: int | None  # the newest
    below: int  # peers whose number is below the placed value (0 without one)
    equal: int  # peers whose number equals it
    quartiles: tuple[float, float, float] | None  # None under two peers


def interpolate(low: float, high: float, t: float) -> float:
    """The value a fraction `t` of the way from `low` to `high`."""
    return low if t == 0 else low + t * (high - low)


def positions(count: int, q: float) -> tuple[int, float]:
    """(index of the lower neighbour in ascending order, fraction towards the next)."""
    h = q * (count - 1)
    lo = math.floor(h)
    return lo, h - lo


def percentile_of(below: int, equal: int, count: int) -> float:
    """100 × (share of peers below + half the share equal)."""
    return 100.0 * (below + 0.5 * equal) / count


# -- the statements --------------------------------------------------------------------------
# Raw, and named, where the ORM cannot say the statement or would not keep its plan
# (docs/history.md, "Read path and indexes"). A `{}` is a bound value, or in the peer-set
# statements (SUMMARY_*, QUARTILES_SQLITE) the peer set's condition, which Piccolo builds from
# the filtered columns (`PeerSet.where`), so no SQL is glued per call.

# Two scalar subqueries, so each of MIN and MAX is one index probe (SQLite optimises a lone
# MIN or MAX only; one SELECT of both scans the attribute's rows).
SOURCE_RANGE = sql.Statement(
    "SELECT (SELECT MIN(source) FROM tw_fact_numbers WHERE attribute = {}) AS first, "
    "(SELECT MAX(source) FROM tw_fact_numbers WHERE attribute = {}) AS last"
)
# A loose index scan (a recursive CTE, one probe per source); the ORM has no WITH RECURSIVE.
SOURCES = sql.Statement(
    "WITH RECURSIVE s(source) AS ("
    "SELECT MIN(source) FROM tw_fact_numbers WHERE attribute = {} "
    "UNION ALL SELECT (SELECT MIN(t.source) FROM tw_fact_numbers t WHERE t.attribute = {} AND t.source > s.source) "
    "FROM s WHERE s.source IS NOT NULL) "
    "SELECT source FROM s WHERE source IS NOT NULL LIMIT {}"
)
# PostgreSQL: one aggregate (FILTER, percentile_cont ... WITHIN GROUP), which the ORM cannot
# say. The peers are read in number order (the ordered subquery makes the planner walk the
# index, even when every row matches): percentile_cont's sort then finds its input already
# sorted and costs next to nothing.
SUMMARY_POSTGRES = (
    "SELECT COUNT(*) AS n, MIN(number) AS low, MAX(number) AS high, MIN(updated_ms) AS first_ms, "
    "MAX(updated_ms) AS last_ms, COUNT(*) FILTER (WHERE number < {}) AS below, "
    "COUNT(*) FILTER (WHERE number = {}) AS equal, "
    "percentile_cont(ARRAY[0.25, 0.5, 0.75]::float8[]) WITHIN GROUP (ORDER BY number) AS quartiles "
    "FROM (SELECT number, updated_ms FROM tw_fact_numbers WHERE {} ORDER BY number) AS peers"
)
# SQLite: one statement of scalar subqueries, each an index probe or a range count.
SUMMARY_SQLITE = (
    "SELECT (SELECT COUNT(*) FROM tw_fact_numbers WHERE {}) AS n, "
    "(SELECT MIN(number) FROM tw_fact_numbers WHERE {}) AS low, "
    "(SELECT MAX(number) FROM tw_fact_numbers WHERE {}) AS high, "
    "(SELECT MIN(updated_ms) FROM tw_fact_numbers WHERE {}) AS first_ms, "
    "(SELECT MAX(updated_ms) FROM tw_fact_numbers WHERE {}) AS last_ms, "
    "(SELECT COUNT(*) FROM tw_fact_numbers WHERE {} AND number < {}) AS below, "
    "(SELECT COUNT(*) FROM tw_fact_numbers WHERE {} AND number = {}) AS equal"
)
# SQLite, a peer set with filters: the same figures with every `number` and `updated_ms` written
# `+number`, `+updated_ms` (unary plus: SQLite then never picks an index for that column), so the
# filtered peer columns alone choose the index (tw_fact_numbers_group_p1 for make, p2 for
# model_year) whatever statistics the connection holds. Without it, and without fresh
# ANALYZE statistics in the reading connection (the service never runs ANALYZE), SQLite walked
# the whole group in number order or over a number range, checking each row's peer column in
# the table: 250 ms for one make among 100,000 peers, against 2 ms through the covering index.
SUMMARY_SQLITE_FILTERED = (
    "SELECT (SELECT COUNT(*) FROM tw_fact_numbers WHERE {}) AS n, "
    "(SELECT MIN(+number) FROM tw_fact_numbers WHERE {}) AS low, "
    "(SELECT MAX(+number) FROM tw_fact_numbers WHERE {}) AS high, "
    "(SELECT MIN(+updated_ms) FROM tw_fact_numbers WHERE {}) AS first_ms, "
    "(SELECT MAX(+updated_ms) FROM tw_fact_numbers WHERE {}) AS last_ms, "
    "(SELECT COUNT(*) FROM tw_fact_numbers WHERE {} AND +number < {}) AS below, "
    "(SELECT COUNT(*) FROM tw_fact_numbers WHERE {} AND +number = {}) AS equal"
)
# SQLite: the two neighbours of each quartile position, each read from the nearer end of the
# index (`LIMIT 2 OFFSET i`). The lower quartile and the median are always nearer the bottom;
# the upper quartile is read from the top when that end is nearer (keyed by whether it is not).
QUARTILES_SQLITE = {
    True: (
        "SELECT 0 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY number LIMIT 2 OFFSET {}) AS q0 "
        "UNION ALL SELECT 1 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY number "
        "LIMIT 2 OFFSET {}) AS q1 "
        "UNION ALL SELECT 2 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY number "
        "LIMIT 2 OFFSET {}) AS q2"
    ),
    False: (
        "SELECT 0 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY number LIMIT 2 OFFSET {}) AS q0 "
        "UNION ALL SELECT 1 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY number "
        "LIMIT 2 OFFSET {}) AS q1 "
        "UNION ALL SELECT 2 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY number DESC "
        "LIMIT 2 OFFSET {}) AS q2"
    ),
}
# The same with filters: the matching peers are sorted (`ORDER BY +number`, see above).
QUARTILES_SQLITE_FILTERED = {
    True: (
        "SELECT 0 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY +number LIMIT 2 OFFSET {}) "
        "AS q0 UNION ALL SELECT 1 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY +number "
        "LIMIT 2 OFFSET {}) AS q1 "
        "UNION ALL SELECT 2 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY +number "
        "LIMIT 2 OFFSET {}) AS q2"
    ),
    False: (
        "SELECT 0 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY +number LIMIT 2 OFFSET {}) "
        "AS q0 UNION ALL SELECT 1 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY +number "
        "LIMIT 2 OFFSET {}) AS q1 "
        "UNION ALL SELECT 2 AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE {} ORDER BY +number DESC "
        "LIMIT 2 OFFSET {}) AS q2"
    ),
}


PEERS = object()  # the slot of a peer-set statement where the peer set's condition goes
# Each peer-set statement as the engine runs it, per set of filtered columns: Piccolo compiles
# the condition into the template once, and each call only binds (as `sql.Statement` does).
_COMPILED: dict[tuple[str, str, tuple[str, ...], tuple[bool, ...]], str] = {}


def peer_statement(template: str, peers: PeerSet, *slots: object) -> tuple[str, list[object]]:
    """A peer-set statement as the engine runs it, and its values: each `{}` of `template` takes
    a value of `slots`, or the peer set's condition where the slot is `PEERS`."""
    engine_type = sql.engine().engine_type
    shape = tuple(slot is PEERS for slot in slots)
    key = (template, engine_type, tuple(column for column, _ in peers.filters), shape)
    text = _COMPILED.get(key)
    if text is None:
        where = peers.where()
        text, _ = QueryString(template, *(where if slot is PEERS else slot for slot in slots)).compile_string(
            engine_type
        )
        _COMPILED[key] = text
    bound = peers.values()
    return text, [v for slot in slots for v in (bound if slot is PEERS else (slot,))]


async def _peer_rows(template: str, peers: PeerSet, *slots: object) -> list[Any]:
    """Run a peer-set statement (`peer_statement`)."""
    text, values = peer_statement(template, peers, *slots)
    return await sql.fetch(text, *values)


# -- the attribute's sources ---------------------------------------------------------------
async def source_range(attribute: str) -> tuple[str | None, str | None]:
    """(first, last) source with numbers for `attribute` (two index probes); None, None when nothing is recorded."""
    row = await SOURCE_RANGE.row(attribute, attribute)
    return (row["first"], row["last"]) if row is not None else (None, None)


async def sources(attribute: str) -> list[str]:
    """Every source with numbers for `attribute`, in order (one index probe each)."""
    rows = await SOURCES.rows(attribute, attribute, MAX_SOURCES_LISTED)
    return [r["source"] for r in rows]


async def has_source(attribute: str, source: str) -> bool:
    row = await F.select(F.attribute).where(F.attribute == attribute, F.source == source).first()
    return row is not None


# -- one entity ------------------------------------------------------------------------------
async def key_number(peers: PeerSet, key: str) -> float | None:
    """The number of entity `key` when it is among `peers` (in the first of its `key_forms` found):
    a probe of the entity's own index, then its peer columns."""
    filters = [F._meta.get_column_by_name(column) == text for column, text in peers.filters]
    for candidate in key_forms(key):
        rows = await F.select(F.number).where(
            F.attribute == peers.attribute,
            F.source == peers.source,
            F.entity_key == candidate,
            F.field == peers.field,
            *filters,
        )
        if rows:
            return float(rows[0]["number"])
    return None


async def key_recorded(peers: PeerSet, key: str) -> bool:
    """Whether `key` has a number for the field at all, whatever its peer fields."""
    bare = dataclasses.replace(peers, filters=())
    return await key_number(bare, key) is not None


# -- the peer set ------------------------------------------------------------------------------
async def _quartiles_sqlite(peers: PeerSet, count: int) -> tuple[float, float, float]:
    reads: list[object] = []
    upper_ascending = True
    for i, q in enumerate(QUARTILES):
        lo, _ = positions(count, q)
        ascending = lo <= count // 2
        assert ascending or i == len(QUARTILES) - 1  # the lower quartile and the median: always
        upper_ascending = ascending
        reads += [PEERS, lo if ascending else count - 2 - lo]
    statements = QUARTILES_SQLITE_FILTERED if peers.filters else QUARTILES_SQLITE
    rows = await _peer_rows(statements[upper_ascending], peers, *reads)
    pairs: dict[int, list[float]] = {}
    for r in rows:
        pairs.setdefault(int(r["q"]), []).append(float(r["number"]))
    out = []
    for i, q in enumerate(QUARTILES):
        _, t = positions(count, q)
        neighbours = pairs[i]
        out.append(interpolate(min(neighbours), max(neighbours), t))
    return out[0], out[1], out[2]


async def summarise(peers: PeerSet, value: float | None) -> Summary:
    """Count, extremes, update times, quartiles, and how many peers lie below and at `value`."""
    placed = None if value is None else float(value)
    if sql.on_postgres():
        rows = await _peer_rows(SUMMARY_POSTGRES, peers, placed, placed, PEERS)
    else:
        statement = SUMMARY_SQLITE_FILTERED if peers.filters else SUMMARY_SQLITE
        rows = await _peer_rows(statement, peers, *[PEERS] * 6, placed, PEERS, placed)
    row = rows[0]
    count = int(row["n"])
    quartiles: tuple[float, float, float] | None = None
    if count >= 2:
        if sql.on_postgres():
            quartiles = tuple(float(v) for v in row["quartiles"])  # type: ignore[assignment]
        else:
            quartiles = await _quartiles_sqlite(peers, count)
    elif count == 1:
        only = float(row["low"])
        quartiles = (only, only, only)
    return Summary(
        count=count,
        low=None if row["low"] is None else float(row["low"]),
        high=None if row["high"] is None else float(row["high"]),
        first_ms=None if row["first_ms"] is None else int(row["first_ms"]),
        last_ms=None if row["last_ms"] is None else int(row["last_ms"]),
        below=int(row["below"] or 0),
        equal=int(row["equal"] or 0),
        quartiles=quartiles,
    )
