"""History and watches speed: Changes over a million fact rows, Benchmark over 100,000
peers, and watch deliveries per second on PostgreSQL with two worker processes.

Prints one JSON line per database. For SQLite and PostgreSQL: `changes_p50_ms` /
`changes_p99_ms` (the Changes tool's read in-process — what a call costs beside its
payment — over `fact_rows` rows of 100,000 entities, each asked for a 30-day window),
`benchmark_p50_ms` / `benchmark_p99_ms` (the Benchmark tool's read over `peers` current
numbers, no filter and with one or two peer filters), each beside its goal and beside
`point_read_p50_ms`, the p50 of one primary-key read on the same database (the anchor:
what one round trip costs on this machine). For PostgreSQL also `deliveries_per_s`:
`watches` watches with pending changes, delivered by `workers` `tollway worker`
processes (charge, receipt, notification, one transaction each), from their start to
the last delivery, beside its goal.

Run: `.venv/bin/python bench/history.py [--facts 1000000] [--peers 100000] [--deliveries 4000]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import create_database, drop_database, percentile, service_env  # noqa: E402

GOALS = {"changes_p50_ms": 5.0, "benchmark_p50_ms": 20.0, "deliveries_per_s": 200.0}


def bench_env(home: Path, url: str) -> dict[str, str]:
    return service_env(home, url, 0x0C, TOLLWAY_OFFLINE="1")


async def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def point_reads(n: int = 400) -> list[float]:
    from tollway._core.storage import sql

    ids = [r["id"] for r in await sql.fetch("SELECT id FROM tw_agents LIMIT 50")]

    async def one() -> None:
        await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", random.choice(ids))

    return await timed(one, n)


# -- facts: Changes ---------------------------------------------------------------------------
ATTRIBUTE, SOURCE = "vehicle_identification", "NHTSA vPIC"
PER_ENTITY = 10  # rows per entity: its first record and nine changes, 30 days apart


def _fact_rows(facts: int):
    """(attribute, entity_key, source, owner, listed, value, value_hash, as_of, first_seen_ms, changed_on, recorded_by),
    entity by entity, oldest first; and the heads (the last row of each entity)."""
    import datetime as dt

    start = dt.date(2025, 1, 1)
    for n in range(facts // PER_ENTITY):
        key = f"1HGCM{n:012d}"
        for v in range(PER_ENTITY):
            day = start + dt.timedelta(days=30 * v + n % 30)
            value = json.dumps(
                {"make": "HONDA", "model": "ACCORD", "model_year": 2003, "trim": f"EX-{v}", "plant_city": "MARYSVILLE"},
                sort_keys=True,
            )
            ms = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000)
            yield (ATTRIBUTE, key, SOURCE, "", True, value, f"{n:032x}{v:032x}", None, ms, day.isoformat(), None)


async def fill_facts(db_kind: str, engine, facts: int) -> None:
    """A million rows, written in bulk (COPY on PostgreSQL); a head per entity."""
    columns = [
        "attribute",
        "entity_key",
        "source",
        "owner",
        "listed",
        "value",
        "value_hash",
        "as_of",
        "first_seen_ms",
        "changed_on",
        "recorded_by",
    ]
    rows = list(_fact_rows(facts))
    if db_kind == "postgres":
        async with engine.pool.acquire() as conn:
            await conn.copy_records_to_table("tw_facts", records=rows, columns=columns)
            await conn.execute(
                "INSERT INTO tw_fact_heads (attribute, entity_key, source, owner, value_hash, listed, fact_id) "
                "SELECT DISTINCT ON (entity_key) attribute, entity_key, source, owner, value_hash, listed, id FROM tw_facts ORDER BY entity_key, id DESC"
            )
            await conn.execute("ANALYZE tw_facts; ANALYZE tw_fact_heads")
        return
    conn = engine.raw_connection()
    conn.executemany(f"INSERT INTO tw_facts ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})", rows)
    conn.execute(
        "INSERT INTO tw_fact_heads (attribute, entity_key, source, owner, value_hash, listed, fact_id) "
        "SELECT attribute, entity_key, source, owner, value_hash, listed, MAX(id) FROM tw_facts GROUP BY attribute, entity_key, source, owner"
    )
    conn.commit()  # no ANALYZE: the service never runs one, so its reads plan without statistics


async def changes_reads(kernel, facts: int, n: int = 500) -> list[float]:
    """The Changes tool's run (its read path) in-process, for random entities and windows."""
    import msgspec

    from tollway._core.plugin_api.tool import ToolContext

    tool = kernel.tools["changes"]
    ctx = ToolContext(request_id="req_bench", agent_id=None, http=kernel.http, settings={})
    entities = facts // PER_ENTITY

    async def one() -> None:
        month = random.randint(1, 9)
        value = msgspec.convert(
            {
                "attribute": ATTRIBUTE,
                "key": f"1HGCM{random.randrange(entities):012d}",
                "since": f"2025-{month:02d}-01",
                "until": f"2025-{month + 1:02d}-01",
            },
            tool.input_type,
        )
        answer = await tool.run(value, ctx)
        assert answer.recorded_since is not None

    return await timed(one, n)


# -- numbers: Benchmark -------------------------------------------------------------------------
MAKES = [f"MAKE{i:02d}" for i in range(20)]


async def fill_numbers(db_kind: str, engine, peers: int) -> None:
    """`peers` current vehicle_complaints totals, 20 makes by 30 model years."""
    from tollway._core.history.declare import peer_group

    group = peer_group("vehicle_complaints", "total", "NHTSA")
    rows = []
    for n in range(peers):
        make, year = MAKES[n % len(MAKES)], 1995 + (n // len(MAKES)) % 30
        rows.append(
            (
                "vehicle_complaints",
                "NHTSA",
                f"{make}|MODEL{n}|{year}",
                "total",
                float(random.randint(0, 5000)),
                group,
                make.lower(),
                str(year),
                None,
                None,
                None,
                "2026-11-01",
                1_790_000_000_000 + n,
            )
        )
    columns = [
        "attribute",
        "source",
        "entity_key",
        "field",
        "number",
        "peer_group",
        "peer_1",
        "peer_2",
        "peer_3",
        "peer_4",
        "peer_5",
        "as_of",
        "updated_ms",
    ]
    if db_kind == "postgres":
        async with engine.pool.acquire() as conn:
            await conn.copy_records_to_table("tw_fact_numbers", records=rows, columns=columns)
            await conn.execute("VACUUM ANALYZE tw_fact_numbers")  # the steady state autovacuum keeps
        return
    conn = engine.raw_connection()
    conn.executemany(
        f"INSERT INTO tw_fact_numbers ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})", rows
    )
    conn.commit()  # no ANALYZE, as above


async def benchmark_reads(kernel, n: int, peers: dict) -> list[float]:
    """The Benchmark tool's run (its read path) in-process over one peer set."""
    import msgspec

    from tollway._core.plugin_api.tool import ToolContext

    tool = kernel.tools["benchmark"]
    ctx = ToolContext(request_id="req_bench", agent_id=None, http=kernel.http, settings={})
    value = msgspec.convert(
        {"attribute": "vehicle_complaints", "field": "total", "peers": peers, "value": 2500}, tool.input_type
    )

    async def one() -> None:
        answer = await tool.run(value, ctx)
        assert answer.count >= 20

    return await timed(one, n)


# -- watch deliveries ---------------------------------------------------------------------
async def queue_deliveries(agents: list[str], watches_per_agent: int, changes_per_watch: int) -> int:
    """Watches with pending changes, written straight into the tables (what polls leave)."""
    from tollway._core.basics.ids import new_id, new_uuid, now_ms
    from tollway._core.storage import sql

    total = 0
    now = now_ms()
    for agent in agents:
        for _ in range(watches_per_agent):
            wid = new_uuid()
            await sql.fetch(
                "INSERT INTO tw_watches (id, agent_id, entity_type, attribute, entity_key, max_spend, spent, price_per_change, "
                "changes_delivered, status, pause_notified, created_ms, updated_ms) "
                "VALUES ({}, {}, 'company', 'us_treasury_sanctions', {}, 100000000, 0, 20000, 0, 'running', {}, {}, {})",
                wid,
                agent,
                str(random.randint(1, 60000)),
                False,
                now,
                now,
            )
            for i in range(changes_per_watch):
                change = {
                    "changed_on": "2026-11-24",
                    "field": "programs[0]",
                    "before": "SDT",
                    "after": f"SDGT{i}",
                    "source": "OFAC",
                    "as_of": None,
                }
                await sql.fetch(
                    "INSERT INTO tw_watch_deliveries (id, watch_id, change_ref, seq, change, state, detected_ms) VALUES ({}, {}, {}, {}, {}, 'pending', {})",
                    new_id("wdl"),
                    wid,
                    f"bench:{i}",
                    i,
                    json.dumps(change),
                    now,
                )
                total += 1
    return total


async def deliveries_per_s(env: dict[str, str], workers: int, deliveries: int) -> dict[str, object]:
    from tollway._core.credits.ledger_check import check_ledger
    from tollway._core.storage import sql
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    kernel = build_kernel(load_settings(env), load_installed=False)
    await kernel.start()
    procs: list[asyncio.subprocess.Process] = []
    try:
        agents = []
        for _ in range(20):
            agents.append(await _agent(kernel))
        per_watch = 10
        total = await queue_deliveries(agents, max(1, deliveries // (len(agents) * per_watch)), per_watch)
        t0 = time.monotonic()
        for _ in range(workers):
            procs.append(
                await asyncio.create_subprocess_exec(
                    str(ROOT / ".venv" / "bin" / "tollway"),
                    "worker",
                    env={**os.environ, **env},
                    cwd=str(ROOT),
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                )
            )
        while True:
            row = await sql.fetch_one("SELECT count(*) AS n FROM tw_watch_deliveries WHERE state = 'pending'")
            if int(row["n"]) == 0:
                break
            if time.monotonic() - t0 > 600:
                raise RuntimeError("deliveries did not finish")
            await asyncio.sleep(0.02)
        span = await sql.fetch_one("SELECT min(delivered_ms) AS a, max(delivered_ms) AS b FROM tw_watch_deliveries")
        problems = await check_ledger()
        seconds = (int(span["b"]) - int(span["a"])) / 1000 or 1e-3
        return {
            "workers": workers,
            "deliveries": total,
            "deliveries_per_s": round(total / seconds, 1),
            "ledger_problems": len(problems),
        }
    finally:
        for proc in procs:
            proc.kill()
            await proc.wait()
        await kernel.stop()


async def _agent(kernel) -> str:
    """An agent with plenty of credits, made the way the operator routes make one."""
    from tollway._core.basics.ids import new_uuid, now_ms
    from tollway._core.credits import ledger
    from tollway._core.storage import sql

    agent_id = new_uuid()
    await sql.fetch(
        "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, NULL, NULL, 0, {})",
        agent_id,
        now_ms(),
    )
    async with kernel.db.transaction():
        await ledger.credit_credits(agent_id, 1_000_000_000, kind="grant", memo="bench")
    return agent_id


async def reads(env: dict[str, str], db_kind: str, args: argparse.Namespace) -> dict[str, object]:
    """Changes and Benchmark read figures, each beside its goal and the point-read anchor."""
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    kernel = build_kernel(load_settings(env), load_installed=True)
    await kernel.start()
    try:
        await _agent(kernel)
        t0 = time.monotonic()
        await fill_facts(db_kind, kernel.db.engine, args.facts)
        filled_s = time.monotonic() - t0
        await changes_reads(kernel, args.facts, 50)  # warm
        changes = await changes_reads(kernel, args.facts)
        await fill_numbers(db_kind, kernel.db.engine, args.peers)
        await benchmark_reads(kernel, 20, {})  # warm
        every = await benchmark_reads(kernel, 200, {})
        one_filter = await benchmark_reads(kernel, 200, {"make": "make07"})
        two_filters = await benchmark_reads(kernel, 200, {"make": "MAKE07", "model_year": 2004})
        anchor = await point_reads()
        return {
            "db": db_kind,
            "fact_rows": args.facts,
            "fill_s": round(filled_s, 1),
            "changes_p50_ms": round(statistics.median(changes), 3),
            "changes_p99_ms": round(percentile(changes, 0.99), 3),
            "changes_p50_goal_ms": GOALS["changes_p50_ms"],
            "peers": args.peers,
            "benchmark_p50_ms": round(statistics.median(every), 2),
            "benchmark_p99_ms": round(percentile(every, 0.99), 2),
            "benchmark_p50_goal_ms": GOALS["benchmark_p50_ms"],
            "benchmark_one_filter_p50_ms": round(statistics.median(one_filter), 2),
            "benchmark_two_filters_p50_ms": round(statistics.median(two_filters), 2),
            "point_read_p50_ms": round(statistics.median(anchor), 3),
        }
    finally:
        await kernel.stop()


async def run_sqlite(args: argparse.Namespace) -> dict[str, object]:
    home = Path(tempfile.mkdtemp())
    return await reads(bench_env(home, f"sqlite:///{home / 'bench.db'}"), "sqlite", args)


async def run_postgres(args: argparse.Namespace) -> dict[str, object]:
    url = await create_database(args.postgres, "tollway_bench_history")
    try:
        env = bench_env(Path(tempfile.mkdtemp()), url)
        out = await reads(env, "postgres", args)
        out.update(await deliveries_per_s(env, args.workers, args.deliveries))
        out["deliveries_per_s_goal"] = GOALS["deliveries_per_s"]
        return out
    finally:
        await drop_database(args.postgres, url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--peers", type=int, default=100_000)
    parser.add_argument("--deliveries", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--postgres", default=os.environ.get("TOLLWAY_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
    )
    args = parser.parse_args()
    import uvloop

    print(json.dumps(uvloop.run(run_sqlite(args))), flush=True)
    print(json.dumps(uvloop.run(run_postgres(args))), flush=True)


if __name__ == "__main__":
    main()
