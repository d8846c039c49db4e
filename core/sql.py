"""Hand-written SQL for the hot paid-call path, run through the bound Piccolo engine.

Piccolo builds each ORM query afresh (a quarter of a millisecond apiece); the
paid path runs a dozen fixed statements per call, so those are written once
here with `{}` placeholders, compiled once per engine type, and executed with
`engine.run_querystring` — the same connection, pool and transaction as every
other query. Portable SQL only (SQLite >= 3.35 and PostgreSQL: RETURNING,
ON CONFLICT).
"""
from __future__ import annotations

from typing import Any

from .tables import Agent


class _Statement:
    """What Piccolo's engines need of a QueryString, with a cached compile."""

    __slots__ = ("template", "args", "_compiled")

    query_type = "generic"
    table = None
    _cache: dict[tuple[str, str], str] = {}

    def __init__(self, template: str, args: tuple[Any, ...]) -> None:
        self.template = template
        self.args = args

    def compile_string(self, engine_type: str = "postgres") -> tuple[str, list[Any]]:
        key = (self.template, engine_type)
        sql = self._cache.get(key)
        if sql is None:
            parts = self.template.split("{}")
            if engine_type == "postgres":
                sql = "".join(p + (f"${i + 1}" if i < len(parts) - 1 else "") for i, p in enumerate(parts))
            else:
                sql = "?".join(parts)
            self._cache[key] = sql
        return sql, list(self.args)

    def __str__(self) -> str:
        return self.template


def on_postgres() -> bool:
    return Agent._meta.db.engine_type == "postgres"


async def fetch(template: str, *args: Any) -> list[Any]:
    """Run one statement; rows support `row["column"]`."""
    engine = Agent._meta.db
    return await engine.run_querystring(_Statement(template, args))


async def fetch_one(template: str, *args: Any) -> Any | None:
    rows = await fetch(template, *args)
    return rows[0] if rows else None
