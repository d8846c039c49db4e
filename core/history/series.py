"""The fact store's read path: the series of one entity a caller may see, and their
rows in a window of days turned into Change rows, each against the row before it.

Every query is an equality on (attribute, entity_key, owner, source) read in `id`
order, which the `tw_facts_series` index answers directly; only the rows returned
are decoded (docs/history.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from tollway._core.history.diff import diff, entity_change
from tollway._core.history.store import PUBLIC
from tollway._core.storage import sql


class ChangeRow(msgspec.Struct):
    """One dated change of an entity's recorded value (docs/history.md)."""

    # `field`: the changed path (dotted/indexed), `$` for the whole value when several
    # fields changed at once, `$entity` when the entity stopped or started being listed;
    # `changed_on`: the UTC day the later value was first seen; `as_of`: the source's
    # own date for the later value.
    changed_on: str
    field: str
    before: Any
    after: Any
    source: str
    as_of: str | None


@dataclasses.dataclass(frozen=True)
class Series:
    """The rows of one (attribute, entity_key, source, owner)."""

    attribute: str
    entity_key: str
    source: str
    owner: str


@dataclasses.dataclass(frozen=True)
class FactRow:
    id: int
    listed: bool
    value: Any
    as_of: str | None
    changed_on: str


# The Changes call's reads stay named statements: each runs on the paid call, where
# bench/history.py measures the whole read at under a tenth of a millisecond on SQLite and a
# table query costs more than that (docs/storage.md), and each is the one whose plan
# docs/history.md shows (`tw_facts_series`, `tw_fact_heads_series`). A series is the
# equality on (attribute, entity_key, owner, source), read in `id` order.
FIRST_ROW = sql.Statement(
    "SELECT id, changed_on FROM tw_facts WHERE attribute = {} AND entity_key = {} AND owner = {} AND source = {} "
    "ORDER BY id LIMIT 1"
)
WINDOW = sql.Statement(
    "SELECT id, listed, value, as_of, changed_on FROM tw_facts "
    "WHERE attribute = {} AND entity_key = {} AND owner = {} AND source = {} "
    "AND id > {} AND changed_on >= {} AND changed_on <= {} ORDER BY id LIMIT {}"
)
BEFORE = sql.Statement(
    "SELECT id, listed, value, as_of, changed_on FROM tw_facts "
    "WHERE attribute = {} AND entity_key = {} AND owner = {} AND source = {} AND id < {} ORDER BY id DESC LIMIT 1"
)
# A caller without an agent reads the public series only; with one, its own too.
PUBLIC_HEADS = sql.Statement(
    "SELECT source, owner FROM tw_fact_heads WHERE attribute = {} AND entity_key = {} AND owner = {}"
)
VISIBLE_HEADS = sql.Statement(
    "SELECT source, owner FROM tw_fact_heads WHERE attribute = {} AND entity_key = {} AND owner IN ({}, {})"
)
HAS_PUBLIC = sql.Statement(
    "SELECT 1 AS found FROM tw_fact_heads WHERE attribute = {} AND entity_key = {} AND owner = {} LIMIT 1"
)
HAS_PRIVATE = sql.Statement("SELECT 1 AS found FROM tw_fact_heads WHERE attribute = {} AND owner <> {} LIMIT 1")
_decode = msgspec.json.Decoder().decode


def _args(s: Series) -> tuple[str, str, str, str]:
    return (s.attribute, s.entity_key, s.owner, s.source)


def _row(r: Any) -> FactRow:
    return FactRow(int(r["id"]), bool(r["listed"]), _decode(r["value"]), r["as_of"], r["changed_on"])


async def visible_series(attribute: str, entity_key: str, agent_id: str | None) -> list[Series]:
    """The series of an entity the caller may read: public ones, and its own private
    ones. Read from the series heads (one row per series), never from the history."""
    if agent_id:
        rows = await VISIBLE_HEADS.rows(attribute, entity_key, PUBLIC, agent_id)
    else:
        rows = await PUBLIC_HEADS.rows(attribute, entity_key, PUBLIC)
    return sorted(
        (Series(attribute, entity_key, r["source"], r["owner"]) for r in rows), key=lambda s: (s.source, s.owner)
    )


async def has_public_series(attribute: str, entity_key: str) -> bool:
    """Whether anyone may read a series of the entity (a public one exists)."""
    row = await HAS_PUBLIC.row(attribute, entity_key, PUBLIC)
    return row is not None


async def keeps_private(attribute: str) -> bool:
    """Whether the attribute holds any agent's private series (which only its owner may read)."""
    row = await HAS_PRIVATE.row(attribute, PUBLIC)
    return row is not None


async def first_row(series: Series) -> tuple[int, str] | None:
    """(id, changed_on) of the series' first row."""
    row = await FIRST_ROW.row(*_args(series))
    return None if row is None else (int(row["id"]), row["changed_on"])


async def _window(series: Series, since: str, until: str, after_id: int, count: int) -> list[FactRow]:
    rows = await WINDOW.rows(*_args(series), after_id, since, until, count)
    return [_row(r) for r in rows]


async def _before(series: Series, fact_id: int) -> FactRow | None:
    row = await BEFORE.row(*_args(series), fact_id)
    return None if row is None else _row(row)


def row_changes(previous: FactRow, row: FactRow, source: str) -> list[ChangeRow]:
    """The Change rows of `row` against the row before it in its series: a `$entity`
    row when the entity stopped or started being listed, else the value's diff."""
    if previous.listed != row.listed:
        found = [entity_change(row.listed)]
    elif row.listed:
        found = diff(previous.value, row.value)
    else:
        found = []
    return [ChangeRow(row.changed_on, field, before, after, source, row.as_of) for field, before, after in found]


async def series_changes(
    series: Series, first_id: int, since: str, until: str, want: int
) -> tuple[list[tuple[int, ChangeRow]], bool]:
    """Up to `want` Change rows of the series whose day is within [since, until], oldest
    first, each with its fact id; and whether the window holds more. The series' first
    row is where its history starts, not a change."""
    out: list[tuple[int, ChangeRow]] = []
    previous: FactRow | None = None
    after_id = 0
    while True:
        rows = await _window(series, since, until, after_id, want + 1)
        if rows and previous is None and rows[0].id != first_id:
            previous = await _before(series, rows[0].id)
        for row in rows:
            if previous is not None:
                out.extend((row.id, change) for change in row_changes(previous, row, series.source))
                if len(out) > want:
                    return out[:want], True
            previous = row
        if len(rows) <= want:
            return out, False
        after_id = rows[-1].id
