"""Named raw SQL statements on the bound Piccolo engine: `{}` placeholders compiled once per engine type.

Piccolo's table queries are the default (`docs/storage.md`). A statement is written by
hand where the ORM cannot say it, or where a bench shows its cost: Piccolo builds each
query afresh (about a quarter of a millisecond) and the paid path runs a dozen fixed
statements per call. Such a statement is a `Statement` (a module-level constant) or a
template passed to `fetch`; either way its `{}` placeholders become `$1, $2, ...` on
PostgreSQL and `?` on SQLite once per engine, and it runs with `engine.run_querystring`:
the same connection, pool and transaction as every other query. On the service's own
engines (the embedded SQLite engine and the PostgreSQL pool, `runtime/database`) the
compiled text goes straight to the driver through the engine's `run_sql` (the caller's
transaction's connection, else the reader or the pool), without Piccolo's query wrapper;
any other engine runs it with `run_querystring`. Values are only ever
bound, never formatted into the text. Portable SQL only (SQLite >= 3.35 and
PostgreSQL: RETURNING, ON CONFLICT). This is the one implementation: the kernel uses it
directly, plugins through `tollway.storage`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from tollway._core.storage.tables import BoundEngine

_COMPILED: dict[tuple[str, str], str] = {}
_LOCK = " FOR UPDATE"


def compiled(template: str, engine_type: str) -> str:
    """`template` with its `{}` placeholders in the engine's style (cached)."""
    key = (template, engine_type)
    sql = _COMPILED.get(key)
    if sql is None:
        parts = template.split("{}")
        if engine_type == "postgres":
            sql = "".join(p + (f"${i + 1}" if i < len(parts) - 1 else "") for i, p in enumerate(parts))
        else:
            sql = "?".join(parts)
        _COMPILED[key] = sql
    return sql


class Bound:
    """What Piccolo's engines need of a QueryString: one template with its arguments."""

    __slots__ = ("template", "args")

    query_type = "generic"
    table = None

    def __init__(self, template: str, args: tuple[Any, ...]) -> None:
        self.template = template
        self.args = args

    def compile_string(self, engine_type: str = "postgres") -> tuple[str, list[Any]]:
        return compiled(self.template, engine_type), list(self.args)

    def __str__(self) -> str:
        return self.template


def engine() -> Any:
    """The Piccolo engine every table of the service is bound to."""
    return BoundEngine.current


def on_postgres() -> bool:
    return BoundEngine.current.engine_type == "postgres"


def for_update() -> str:
    """The row-lock suffix: ` FOR UPDATE` on PostgreSQL, nothing on SQLite (whose single
    writer already serialises transactions)."""
    return _LOCK if on_postgres() else ""


def transaction() -> Any:
    """The engine's transaction: `async with transaction(): ...`; nested ones join it."""
    return BoundEngine.current.transaction()


def run(engine: Any, template: str, args: tuple[Any, ...]) -> Awaitable[list[Any]]:
    """Run `template` with `args` on `engine` (the bound one, or a test's second "process"):
    on the driver through the engine's `run_sql` when it has one, else through Piccolo.
    The engine's own awaitable is handed back (no coroutine of this module's around it:
    the paid path runs a handful of statements per call)."""
    direct = getattr(engine, "run_sql", None)
    if direct is not None:
        return direct(compiled(template, engine.engine_type), args)  # type: ignore[no-any-return]
    return engine.run_querystring(Bound(template, args))  # type: ignore[no-any-return]


def fetch(template: str, *args: Any) -> Awaitable[list[Any]]:
    """Run one statement (await it); rows support `row["column"]`."""
    return run(BoundEngine.current, template, args)


async def fetch_one(template: str, *args: Any) -> Any | None:
    rows = await fetch(template, *args)
    return rows[0] if rows else None


class Statement:
    """One named statement, written once at module level: `{}` placeholders for its
    values; `for_update=True` appends ` FOR UPDATE` on PostgreSQL only. `rows`, `row`
    and `execute` bind the values in order and run it in the caller's transaction (if
    any); rows are plain dicts on both engines."""

    __slots__ = ("template", "locking")

    def __init__(self, template: str, *, for_update: bool = False) -> None:
        if template.count("{") != template.count("{}") or template.count("}") != template.count("{}"):
            raise ValueError("a statement's only braces are its `{}` placeholders")
        self.template = template
        self.locking = template + _LOCK if for_update else template

    def text(self, engine_type: str) -> str:
        """The SQL as the engine runs it."""
        return compiled(self.locking if engine_type == "postgres" else self.template, engine_type)

    def rows(self, *args: Any) -> Awaitable[list[dict[str, Any]]]:
        """The rows (await it): SQLite's are dicts already, asyncpg's records are copied."""
        db = BoundEngine.current
        if db.engine_type != "postgres":
            return run(db, self.template, args)
        return _dicts(run(db, self.locking, args))

    async def row(self, *args: Any) -> dict[str, Any] | None:
        found = await self.rows(*args)
        return found[0] if found else None

    async def execute(self, *args: Any) -> None:
        await self.rows(*args)

    def __repr__(self) -> str:
        return f"Statement({self.template!r})"


async def _dicts(records: Awaitable[list[Any]]) -> list[dict[str, Any]]:
    return [dict(r) for r in await records]


def statement(template: str, *, for_update: bool = False) -> Statement:
    return Statement(template, for_update=for_update)
