"""The operator console's overview over a million receipts, on SQLite and PostgreSQL.

Prints one JSON line per database: `overview_p50_ms` / `overview_p99_ms`, the whole
`GET /console` (30 days: revenue per day by category and by payment method, the last hour's
calls and errors, each tool's p50/p99 run time over 24 hours, credits outstanding, pending
money; the page rendered) through the ASGI app in-process, and the same for `?days=90`,
beside the goal (300 ms); `first_overview_ms`, the first render after the receipts were
written, which sums each ended day once (kept after); `cpu_ms_per_overview`, this process's
CPU per render (from /proc/self/stat: PostgreSQL's own work is in its server processes,
SQLite's is here); and the anchor beside them in the same run, `anchor_sum_30_days_ms`: the
one GROUP BY over every receipt of the 30 days that the overview's revenue chart used
before ended days were kept. `machine_idle_pct` says how idle the machine was meanwhile.

The receipts are written in bulk (COPY on PostgreSQL), not by a million paid calls: their
columns spread over the last 90 days, 30 tools of five categories, credits and x402, 3 %
failed, 2 % refunded, run times from 5 ms to 3 s; each row's body is one receipt the
service really signed (the overview reads the columns, never the bodies).

Run: `.venv/bin/python bench/console.py [--receipts 1000000] [--renders 30]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import OPERATOR, create_database, drop_database, percentile, service_env  # noqa: E402
from serving import idle_since, machine_idle  # noqa: E402

GOAL_MS = 300.0
DAY_MS = 86_400_000
CATEGORIES = ("data", "verification", "communication", "commerce", "infrastructure")
COLUMNS = (
    "receipt_id",
    "agent_id",
    "category",
    "tool",
    "amount",
    "status",
    "revision",
    "job_id",
    "body",
    "provider_cost",
    "created_ms",
    "payment_method",
    "execution_status",
    "duration_ms",
)


def receipt_rows(count: int, body: str, agents: list[str], now: int):
    rng = random.Random(7)
    tools = [(f"tool_{n:02d}", CATEGORIES[n % len(CATEGORIES)]) for n in range(30)]
    for n in range(count):
        tool, category = tools[rng.randrange(len(tools))]
        roll = rng.random()
        failed = roll < 0.03
        status = "refunded" if failed or roll > 0.98 else "settled"
        yield (
            f"rcpt_{n:024x}",
            agents[rng.randrange(len(agents))],
            category,
            tool,
            rng.randrange(1_000, 500_000),
            status,
            1,
            None,
            body,
            None,
            now - rng.randrange(90 * DAY_MS),
            "x402" if rng.random() < 0.3 else "credits",
            "failed" if failed else "completed",
            int(rng.lognormvariate(4.5, 1.0)) % 3000 + 5,
        )


async def fill(kernel, db_kind: str, count: int) -> None:
    from tollway._core.receipts.receipts import ReceiptDraft
    from tollway._core.storage import sql

    agents = []
    for n in range(200):
        agent = await kernel.agents.for_wallet(f"0x{n:040x}")
        agents.append(agent)
    signed = await kernel.receipts.issue(
        ReceiptDraft(
            agent_id=agents[0],
            category="data",
            subcategory="tool_00",
            amount=1_000,
            status="settled",
            execution_status="completed",
            payment_method="credits",
            tool="tool_00",
            request_id="req_bench",
        )
    )
    await sql.fetch("DELETE FROM tw_receipts")
    body = json.dumps(signed)
    rows = receipt_rows(count, body, agents, int(time.time() * 1000))
    engine = kernel.db.engine
    if db_kind == "postgres":
        async with engine.pool.acquire() as conn:
            await conn.copy_records_to_table("tw_receipts", records=list(rows), columns=list(COLUMNS))
            await conn.execute("ANALYZE tw_receipts")
        return
    conn = engine.raw_connection()
    conn.executemany(f"INSERT INTO tw_receipts ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})", rows)
    conn.execute("ANALYZE")
    conn.commit()


def cpu_s() -> float:
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def sign_in(client) -> None:
    import re

    page = await client.get("/console/sign-in")
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text).group(1)
    answer = await client.post("/console/sign-in", data={"csrf": csrf, "token": OPERATOR})
    assert answer.status_code == 303, answer.text


async def renders(client, path: str, n: int) -> tuple[list[float], float]:
    times, cpu0 = [], cpu_s()
    for _ in range(n):
        t0 = time.perf_counter()
        page = await client.get(path)
        times.append((time.perf_counter() - t0) * 1000)
        assert page.status_code == 200 and "Revenue per day" in page.text, page.text[:300]
    return times, (cpu_s() - cpu0) * 1000 / n


async def anchor(n: int) -> list[float]:
    """The one GROUP BY over every revenue receipt of 30 days, by category (the chart's old read)."""
    from tollway._core.storage import sql

    since = (int(time.time() * 1000) // DAY_MS - 29) * DAY_MS
    statement = (
        "SELECT created_ms / 86400000 AS day, category, SUM(amount) AS total FROM tw_receipts WHERE created_ms >= {} "
        "AND status IN ('settled', 'pending') AND (tool IS NULL OR tool <> 'credits_top_up') GROUP BY 1, 2"
    )
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        await sql.fetch(statement, since)
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def run(db_kind: str, url: str, home: Path, args) -> dict:
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings
    from tollway.testing import http_client
    from tollway_console import plugin as console

    kernel = build_kernel(
        load_settings(service_env(home, url, 0x0D, TOLLWAY_OFFLINE="1", TOLLWAY_DOTENV="0")),
        plugins=[("tollway_console", console)],
        load_installed=False,
    )
    await kernel.start()
    try:
        t0 = time.perf_counter()
        await fill(kernel, db_kind, args.receipts)
        filled_s = time.perf_counter() - t0
        idle0 = machine_idle()
        async with http_client(kernel) as client:
            await sign_in(client)
            t0 = time.perf_counter()
            first = await client.get("/console?days=90")
            first_ms = (time.perf_counter() - t0) * 1000
            assert first.status_code == 200
            month, cpu_month = await renders(client, "/console", args.renders)
            quarter, cpu_quarter = await renders(client, "/console?days=90", args.renders)
        sums = await anchor(max(3, args.renders // 5))
        idle = idle_since(idle0) * 100
    finally:
        await kernel.stop()
    return {
        "bench": "console_overview",
        "db": db_kind,
        "receipts": args.receipts,
        "goal_ms": GOAL_MS,
        "overview_p50_ms": round(percentile(month, 0.5), 1),
        "overview_p99_ms": round(percentile(month, 0.99), 1),
        "overview_90_days_p50_ms": round(percentile(quarter, 0.5), 1),
        "overview_90_days_p99_ms": round(percentile(quarter, 0.99), 1),
        "cpu_ms_per_overview": round(cpu_month, 1),
        "cpu_ms_per_overview_90_days": round(cpu_quarter, 1),
        "first_overview_ms": round(first_ms, 1),
        "anchor_sum_30_days_ms": round(percentile(sums, 0.5), 1),
        "met": percentile(month, 0.99) < GOAL_MS and percentile(quarter, 0.99) < GOAL_MS,
        "fill_s": round(filled_s, 1),
        "machine_idle_pct": round(idle, 1),
        "load_avg_1m": os.getloadavg()[0],
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--receipts", type=int, default=1_000_000)
    parser.add_argument("--renders", type=int, default=30)
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    args = parser.parse_args()
    admin = os.environ.get("TOLLWAY_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
    with tempfile.TemporaryDirectory(prefix="tollway-bench-console-") as tmp:
        if args.db in ("sqlite", "both"):
            home = Path(tmp) / "sqlite"
            home.mkdir()
            print(json.dumps(await run("sqlite", f"sqlite:///{home / 'bench.sqlite'}", home, args)), flush=True)
        if args.db in ("postgres", "both"):
            url = await create_database(admin, "tollway_bench_console")
            try:
                home = Path(tmp) / "postgres"
                home.mkdir()
                print(json.dumps(await run("postgres", url, home, args)), flush=True)
            finally:
                await drop_database(admin, url)


if __name__ == "__main__":
    asyncio.run(main())
