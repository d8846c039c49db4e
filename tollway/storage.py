"""The storage kit a plugin uses for its own tables: the transaction, named raw statements, row locks, JSON columns.

By default a plugin queries its Piccolo tables (docs/storage.md)::

    from tollway import storage

    row = await Goal.select().where(Goal.id == goal_id).first()          # dict or None
    rows = await Case.select(Case.id, Case.state).where(Case.goal_id == goal_id).order_by(Case.opened_ms)
    await Case.insert(Case(id=..., goal_id=..., state="open"))
    await Case.update({Case.state: "closed", Case.updated_ms: now}).where(Case.id == case_id)
    claimed = await Case.update({Case.held: Case.held + 5}).where(Case.id == case_id).returning(Case.held)
    n = await Case.count().where(Case.state.is_in(states))
    async with storage.transaction():
        goal = await storage.lock_rows(Goal.select().where(Goal.id == goal_id)).first()  # FOR UPDATE on PostgreSQL

A raw statement is for what the ORM cannot say (``ON CONFLICT ... DO NOTHING``, a
conditional ``CASE`` update, a join with an aggregate) or where a bench shows the ORM's
cost. It is a module-level constant with ``{}`` placeholders, compiled once per engine;
values are always bound, never formatted into the text::

    CLAIM = storage.statement(
        "INSERT INTO goals_events (id, goal_id, event_id) VALUES ({}, {}, {}) "
        "ON CONFLICT (goal_id, event_id) DO NOTHING RETURNING id"
    )
    claimed = await CLAIM.row(new_id, goal_id, event_id)   # dict or None
    LOCKED = storage.statement("SELECT * FROM goals_goals WHERE id = {}", for_update=True)

A statement run once (a test's check, a script) may skip the name: ``await
storage.rows("SELECT ... WHERE id = {}", x)``; a plugin's modules name theirs.

Text columns holding JSON go through ``dumps``/``loads`` (compact, the same bytes on
both engines). A full-text index (FTS5 on SQLite, tsvector on PostgreSQL) is given the
words of ``fulltext.document`` and queried with ``fulltext.query_terms``, so a query means
the same on both engines.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from tollway._core.storage import fulltext
from tollway._core.storage.migration_steps import add_tables
from tollway._core.storage.sql import Statement, engine, for_update, on_postgres, statement, transaction

__all__ = [
    "Statement",
    "add_tables",
    "dumps",
    "engine",
    "execute",
    "for_update",
    "fulltext",
    "loads",
    "lock_rows",
    "on_postgres",
    "row",
    "rows",
    "statement",
    "transaction",
]

Q = TypeVar("Q")


def lock_rows(query: Q) -> Q:
    """A Piccolo `select` that takes row locks (`FOR UPDATE`) on PostgreSQL; on SQLite the
    same query unchanged (its single writer already serialises transactions)."""
    return query.lock_rows() if on_postgres() else query  # type: ignore[attr-defined]


async def rows(template: str, *args: Any) -> list[dict[str, Any]]:
    """Run a one-off statement (`{}` placeholders, values bound); its rows as dicts."""
    return await Statement(template).rows(*args)


async def row(template: str, *args: Any) -> dict[str, Any] | None:
    return await Statement(template).row(*args)


async def execute(template: str, *args: Any) -> None:
    await Statement(template).execute(*args)


def dumps(value: Any) -> str:
    """A JSON text column's value: compact JSON."""
    return msgspec.json.encode(value).decode()


def loads(text: str | bytes | None) -> Any:
    """A JSON text column read back (NULL stays None)."""
    return None if text is None else msgspec.json.decode(text)
