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

from tollway._core.history.declare import MAX_PEER_FIELDS, peer_group
from tollway._core.history.keys import key_forms
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

    def where(self) -> tuple[str, tuple[object, ...]]:
        clause = "peer_group = {}"
        for column, _ in self.filters:
            assert column in PEER_COLUMNS
            clause += " AND " + column + " = {}"
        return clause, (peer_group(self.attribute, self.field, self.source), *(text for _, text in self.filters))


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


# -- the attribute's sources ---------------------------------------------------------------
async def source_range(attribute: str) -> tuple[str | None, str | None]:
    """(first, last) source with numbers for `attribute` (two index probes); None, None when nothing is recorded."""
    row = await sql.fetch_one(
        "SELECT (SELECT MIN(source) FROM tw_fact_numbers WHERE attribute = {}) AS first, "
        "(SELECT MAX(source) FROM tw_fact_numbers WHERE attribute = {}) AS last",
        attribute,
        attribute,
    )
    return (row["first"], row["last"]) if row is not None else (None, None)


async def sources(attribute: str) -> list[str]:
    """Every source with numbers for `attribute`, in order (one index probe each)."""
    rows = await sql.fetch(
        "WITH RECURSIVE s(source) AS ("
        "SELECT MIN(source) FROM tw_fact_numbers WHERE attribute = {} "
        "UNION ALL SELECT (SELECT MIN(t.source) FROM tw_fact_numbers t WHERE t.attribute = {} AND t.source > s.source) "
        "FROM s WHERE s.source IS NOT NULL) "
        "SELECT source FROM s WHERE source IS NOT NULL LIMIT " + str(MAX_SOURCES_LISTED),
        attribute,
        attribute,
    )
    return [r["source"] for r in rows]


async def has_source(attribute: str, source: str) -> bool:
    row = await sql.fetch_one(
        "SELECT 1 AS found FROM tw_fact_numbers WHERE attribute = {} AND source = {} LIMIT 1", attribute, source
    )
    return row is not None


# -- one entity ------------------------------------------------------------------------------
async def key_number(peers: PeerSet, key: str) -> float | None:
    """The number of entity `key` when it is among `peers` (in the first of its `key_forms` found)."""
    clause = "attribute = {} AND source = {} AND entity_key = {} AND field = {}"  # the entity's own index
    for column, _ in peers.filters:
        clause += " AND " + column + " = {}"
    filters = tuple(text for _, text in peers.filters)
    for candidate in key_forms(key):
        row = await sql.fetch_one(
            "SELECT number FROM tw_fact_numbers WHERE " + clause,
            peers.attribute,
            peers.source,
            candidate,
            peers.field,
            *filters,
        )
        if row is not None:
            return float(row["number"])
    return None


async def key_recorded(peers: PeerSet, key: str) -> bool:
    """Whether `key` has a number for the field at all, whatever its peer fields."""
    bare = dataclasses.replace(peers, filters=())
    return await key_number(bare, key) is not None


# -- the peer set ------------------------------------------------------------------------------
def _summary_postgres(clause: str) -> str:
    # The peers are read in number order (the ordered subquery makes the planner walk the
    # index, even when every row matches): percentile_cont's sort then finds its input
    # already sorted and costs next to nothing.
    return (
        "SELECT COUNT(*) AS n, MIN(number) AS low, MAX(number) AS high, MIN(updated_ms) AS first_ms, "
        "MAX(updated_ms) AS last_ms, COUNT(*) FILTER (WHERE number < {}) AS below, "
        "COUNT(*) FILTER (WHERE number = {}) AS equal, "
        "percentile_cont(ARRAY[0.25, 0.5, 0.75]::float8[]) WITHIN GROUP (ORDER BY number) AS quartiles "
        "FROM (SELECT number, updated_ms FROM tw_fact_numbers WHERE " + clause + " ORDER BY number) AS peers"
    )


def _summary_sqlite(clause: str) -> str:
    def sub(what: str, extra: str = "") -> str:
        return "(SELECT " + what + " FROM tw_fact_numbers WHERE " + clause + extra + ")"

    return (
        "SELECT "
        + sub("COUNT(*)")
        + " AS n, "
        + sub("MIN(number)")
        + " AS low, "
        + sub("MAX(number)")
        + " AS high, "
        + sub("MIN(updated_ms)")
        + " AS first_ms, "
        + sub("MAX(updated_ms)")
        + " AS last_ms, "
        + sub("COUNT(*)", " AND number < {}")
        + " AS below, "
        + sub("COUNT(*)", " AND number = {}")
        + " AS equal"
    )


def _quartile_reads(clause: str, count: int) -> str:
    """The two neighbours of each quartile position, each read from the nearer end of the index."""
    parts = []
    for i, q in enumerate(QUARTILES):
        lo, _ = positions(count, q)
        ascending = lo <= count // 2
        offset = lo if ascending else count - 2 - lo
        order = "number" if ascending else "number DESC"
        parts.append(
            f"SELECT {i} AS q, number FROM (SELECT number FROM tw_fact_numbers WHERE "
            + clause
            + f" ORDER BY {order} LIMIT 2 OFFSET {offset}) AS q{i}"
        )
    return " UNION ALL ".join(parts)


async def _quartiles_sqlite(peers: PeerSet, count: int) -> tuple[float, float, float]:
    clause, args = peers.where()
    rows = await sql.fetch(_quartile_reads(clause, count), *(args * len(QUARTILES)))
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
    clause, args = peers.where()
    placed = None if value is None else float(value)
    if sql.on_postgres():
        row = await sql.fetch_one(_summary_postgres(clause), placed, placed, *args)
    else:
        row = await sql.fetch_one(_summary_sqlite(clause), *(args * 5), *args, placed, *args, placed)
    assert row is not None
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
