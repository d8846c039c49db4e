"""`plan`: a statement's query plan as text on the running engine (PostgreSQL asked with
sequential scans disabled, so it shows the index it can use even on a small table)."""

from __future__ import annotations

from tollway._core.storage import sql


async def plan(statement: sql.Statement | str, *args: object) -> str:
    """EXPLAIN (PostgreSQL) or EXPLAIN QUERY PLAN (SQLite) of `statement` with `args`, one line per plan row."""
    engine = "postgres" if sql.on_postgres() else "sqlite"
    explain = "EXPLAIN " if engine == "postgres" else "EXPLAIN QUERY PLAN "
    async with sql.transaction():
        if engine == "postgres":
            await sql.fetch("SET LOCAL enable_seqscan = off")
        template = statement if isinstance(statement, str) else statement.template
        rows = await sql.fetch(explain + template, *args)
    return "\n".join(" ".join(str(v) for v in dict(r).values()) for r in rows)
