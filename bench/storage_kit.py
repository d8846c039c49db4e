"""The ORM's cost beside a named statement: one goals row read, and updated with RETURNING, timed per call.

Piccolo builds each table query afresh; a `tollway.storage` statement is compiled once
per engine. On SQLite a statement itself takes microseconds, so the difference is the
ORM's own time; on PostgreSQL the round trip dominates. docs/storage.md cites it.

Run: `.venv/bin/python bench/storage_kit.py [--n 3000] [--postgres postgres://user@host/admin_db]`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import create_database, drop_database, percentile  # noqa: E402


async def measure(url: str, n: int) -> dict[str, float]:
    from tollway import storage
    from tollway._runtime.database import Database
    from tollway._runtime.database.migrations import Migrator, all_apps
    from tollway_goals.plugin import APP
    from tollway_goals.tables import Goal

    read = storage.statement("SELECT * FROM goals_goals WHERE id = {}")
    bump = storage.statement("UPDATE goals_goals SET held = held + {} WHERE id = {} RETURNING id")
    db = Database.from_url(url)
    db.add_tables(APP.table_classes)
    await db.connect()
    try:
        await Migrator(db.engine, db.kind, all_apps([APP])).migrate()
        await Goal.insert(
            Goal(
                id="goal_bench",
                agent_id="agent",
                request_id="req_bench",
                receipt_id="rcpt",
                goal="bench",
                status="running",
                budget=10**9,
                spent=0,
                held=0,
                cases_enabled=False,
                max_depth=3,
                max_awake=20,
                webhook_secret="s",
                created_ms=0,
                updated_ms=0,
                seq=0,
            )
        )
        ways = {
            "read, table query": lambda: Goal.select().where(Goal.id == "goal_bench").first(),
            "read, named statement": lambda: read.row("goal_bench"),
            "update returning, table query": lambda: (
                Goal.update({Goal.held: Goal.held + 0}).where(Goal.id == "goal_bench").returning(Goal.id)
            ),
            "update returning, named statement": lambda: bump.rows(0, "goal_bench"),
        }
        out = {}
        for name, call in ways.items():
            for _ in range(min(n, 200)):  # warm-up
                await call()
            times = []
            for _ in range(n):
                start = time.perf_counter()
                await call()
                times.append(time.perf_counter() - start)
            out[name] = percentile(times, 0.5) * 1e6
        return out
    finally:
        await db.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--postgres", help="an admin URL: a throwaway database is made on its server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        runs = {"sqlite": f"sqlite:///{home}/bench.db"}
        made = None
        if args.postgres:
            made = runs["postgres"] = await create_database(args.postgres, "storage_kit_bench")
        try:
            for kind, url in runs.items():
                for name, us in (await measure(url, args.n)).items():
                    print(f"{kind:9} {name:36} {us:8.1f} µs/call (median of {args.n})")
        finally:
            if made:
                await drop_database(args.postgres, made)


if __name__ == "__main__":
    asyncio.run(main())
