"""A database as the release before migrations left it, and what a test compares.

The fixture in tests/runtime/fixtures/pre_migrations/ was made by that release:
`schema.<kind>.sql` is the DDL its table creation ran (no `migration` table),
`rows.json` every row a short history of the service wrote through it (an
x402 call, a top-up, an agent with credits and an access token, a credits call,
an idempotent call and its refund, a job done by a worker). Everything here
talks to the database directly (sqlite3, asyncpg), never through the code under
test.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "runtime" / "fixtures" / "pre_migrations"


def fixture() -> dict[str, Any]:
    """{"meta": what the history left (ids, the access token, balances), "rows": {table: [row, ...]}}."""
    return json.loads((FIXTURE / "rows.json").read_text())


def _statements(kind: str, skip_tables: tuple[str, ...]) -> list[str]:
    text = (FIXTURE / f"schema.{kind}.sql").read_text()
    out = []
    for stmt in (s.strip() for s in text.split(";\n")):
        if not stmt or any(f'"{t}"' in stmt or f" {t} " in f"{stmt} " for t in skip_tables):
            continue
        out.append(stmt)
    return out


def _pg(url: str) -> str:
    return url.replace("postgres://", "postgresql://", 1)


async def make_old_database(url: str, *, with_rows: bool = True, skip_tables: tuple[str, ...] = ()) -> None:
    """Create the previous release's schema (minus `skip_tables`) and, by default, its rows."""
    rows = fixture()["rows"] if with_rows else {}
    rows = {t: r for t, r in rows.items() if t not in skip_tables}
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url[len("sqlite://") :])
        try:
            for stmt in _statements("sqlite", skip_tables):
                conn.execute(stmt)
            for table, items in rows.items():
                for row in items:
                    cols = ", ".join(f'"{c}"' for c in row)
                    conn.execute(
                        f'INSERT INTO "{table}" ({cols}) VALUES ({", ".join("?" * len(row))})', list(row.values())
                    )
            conn.commit()
        finally:
            conn.close()
        return
    import asyncpg

    conn = await asyncpg.connect(_pg(url))
    try:
        for stmt in _statements("postgres", skip_tables):
            await conn.execute(stmt)
        for table, items in rows.items():
            for row in items:
                cols = ", ".join(f'"{c}"' for c in row)
                marks = ", ".join(f"${i}" for i in range(1, len(row) + 1))
                await conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', *row.values())
    finally:
        await conn.close()


async def _query(url: str, sql: str) -> list[dict[str, Any]]:
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url[len("sqlite://") :])
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql)]
        finally:
            conn.close()
    import asyncpg

    conn = await asyncpg.connect(_pg(url))
    try:
        return [dict(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


def normalized(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in a stable order, booleans as 0/1 (as SQLite returns them)."""
    rows = [{k: int(v) if isinstance(v, bool) else v for k, v in r.items()} for r in rows]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


async def rows_of(url: str, table: str) -> list[dict[str, Any]]:
    """Every row of `table`, normalized."""
    return normalized(await _query(url, f'SELECT * FROM "{table}"'))


def index_names(schema: dict[str, Any], table: str) -> set[str]:
    """The names of `table`'s indexes in a `schema_of` result (either database)."""
    return {ix[0] if isinstance(ix, tuple) else ix["indexname"] for ix in schema[table]["indexes"]}


async def tables_of(url: str) -> set[str]:
    if url.startswith("sqlite:"):
        rows = await _query(url, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    else:
        rows = await _query(url, "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()")
    return {r["name"] for r in rows}


async def without_rowid(url: str) -> set[str]:
    """The kernel's tables (`tw_*`) SQLite keeps as `WITHOUT ROWID` (none on PostgreSQL, whose
    tables are heaps); plugins' full-text indexes have some of their own."""
    if not url.startswith("sqlite:"):
        return set()
    rows = await _query(url, "SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    return {r["name"] for r in rows if r["name"].startswith("tw_") and r["sql"].upper().endswith("WITHOUT ROWID")}


async def schema_of(url: str, *, exclude: tuple[str, ...] = ("migration",)) -> dict[str, Any]:
    """Columns (type, null, default, key), indexes and constraints of every table,
    as the database itself reports them (UNLOGGED too, on PostgreSQL)."""
    tables = sorted(t for t in await tables_of(url) if t not in exclude)
    schema: dict[str, Any] = {}
    if url.startswith("sqlite:"):
        for t in tables:
            columns = await _query(url, f"PRAGMA table_info('{t}')")
            indexes = []
            for ix in await _query(url, f"PRAGMA index_list('{t}')"):
                cols = [c["name"] for c in await _query(url, f"PRAGMA index_info('{ix['name']}')")]
                indexes.append((ix["name"], ix["unique"], ix["origin"], cols))
            schema[t] = {"columns": columns, "indexes": sorted(indexes)}
        return schema
    for t in tables:
        columns = await _query(
            url,
            "SELECT column_name, data_type, character_maximum_length, is_nullable, column_default, ordinal_position "
            f"FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '{t}' ORDER BY ordinal_position",
        )
        indexes = await _query(
            url,
            f"SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = '{t}' ORDER BY indexname",
        )
        constraints = await _query(
            url,
            f"SELECT conname, contype, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = '{t}'::regclass ORDER BY conname",
        )
        persistence = await _query(url, f"SELECT relpersistence FROM pg_class WHERE oid = '{t}'::regclass")
        schema[t] = {
            "columns": columns,
            "indexes": indexes,
            "constraints": constraints,
            "persistence": persistence[0]["relpersistence"],
        }
    return schema
