"""The anchor of bench/jobs.py: procrastinate's bare PostgreSQL queue running the same trivial job.

`run(admin, jobs, workers, concurrency)` makes a fresh database, applies procrastinate's
schema, starts `workers` worker processes (`python -m procrastinate worker`, each running
`concurrency` jobs at once, as ours do), and measures what bench/jobs.py measures for ours:
the dispatch latency of 200 jobs deferred at a steady 50 jobs/s, then a burst of `jobs`
deferred by 16 concurrent callers in this process, its throughput (first deferral to last
completion, from procrastinate's event table) and its CPU per completed job (this process
while it defers + the worker processes + the PostgreSQL backends of the database).

The worker processes load `procrastinate_anchor:app` (this module, with `bench/` on the
path) and find their database in BENCH_PROCRASTINATE_URL.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import procrastinate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import BurstCpu, create_database, drop_database, percentile  # noqa: E402

URL_ENV = "BENCH_PROCRASTINATE_URL"
CALLERS = 16  # concurrent deferring callers, as bench/jobs.py accepts ours


def make_app(url: str | None) -> procrastinate.App:
    """An app on `url`, its pool sized like Tollway's PostgreSQL pool (2 to 20 connections)."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url or "", min_size=2, max_size=20))

    @app.task(name="add")
    async def add(a: int, b: int) -> int:
        return a + b

    return app


# What the worker processes load: the connector opens nothing until the worker starts.
app = make_app(os.environ.get(URL_ENV))


async def start_workers(url: str, count: int, concurrency: int) -> list[asyncio.subprocess.Process]:
    procs = []
    for _ in range(count):
        procs.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "procrastinate",
                "--app=procrastinate_anchor.app",
                "worker",
                f"--concurrency={concurrency}",
                env={**os.environ, URL_ENV: url, "PYTHONPATH": str(ROOT / "bench")},
                cwd=str(ROOT),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
        )
    return procs


async def wait_all_done(local: procrastinate.App, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = await local.connector.execute_query_all_async(
            "SELECT count(*) AS n FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
        )
        if int(rows[0]["n"]) == 0:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("procrastinate's jobs did not finish in time")


async def wait_workers(local: procrastinate.App, count: int, timeout_s: float = 60) -> None:
    """Until `count` workers have registered (each worker's first act once it has connected)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = await local.connector.execute_query_all_async("SELECT count(*) AS n FROM procrastinate_workers")
        if int(rows[0]["n"]) >= count:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("procrastinate's workers did not start")


async def run(admin: str, jobs: int, workers: int, concurrency: int) -> dict[str, object]:
    url = await create_database(admin, "procrastinate_bench_jobs")
    local = make_app(url)
    procs: list[asyncio.subprocess.Process] = []
    try:
        async with local.open_async():
            await local.schema_manager.apply_schema_async()
            add = local.tasks["add"]
            procs = await start_workers(url, workers, concurrency)
            await wait_workers(local, workers)
            await asyncio.sleep(0.5)  # each then starts listening for new jobs

            # 1. dispatch latency at a steady 50 jobs/s (the workers idle when each job arrives), as for ours
            for i in range(200):
                await add.defer_async(a=i, b=1)
                await asyncio.sleep(0.02)
            await wait_all_done(local)
            await local.connector.execute_query_async("ANALYZE")  # as bench/jobs.py does for ours (ANALYZED there)
            rows = await local.connector.execute_query_all_async(
                "SELECT extract(epoch FROM s.at - d.at) * 1000 AS ms FROM procrastinate_events d"
                " JOIN procrastinate_events s ON s.job_id = d.job_id AND s.type = 'started' WHERE d.type = 'deferred'"
            )
            dispatch = [float(r["ms"]) for r in rows]
            last_paced = (
                await local.connector.execute_query_all_async("SELECT max(id) AS id FROM procrastinate_jobs")
            )[0]["id"]

            # 2. a burst deferred by 16 concurrent callers, CPU measured around it
            counter = iter(range(jobs))

            async def caller() -> None:
                for i in counter:
                    await add.defer_async(a=i, b=1)

            cpu = BurstCpu(admin, url, [p.pid for p in procs])
            await cpu.start()
            await asyncio.gather(*[caller() for _ in range(CALLERS)])
            await cpu.handed_over()
            await wait_all_done(local)
            await cpu.finished()
            span = (
                await local.connector.execute_query_all_async(
                    "SELECT extract(epoch FROM max(at) FILTER (WHERE type IN ('succeeded', 'failed'))"
                    " - min(at) FILTER (WHERE type = 'deferred')) AS s,"
                    " count(*) FILTER (WHERE type = 'succeeded') AS n FROM procrastinate_events WHERE job_id > %(last)s",
                    last=last_paced,
                )
            )[0]
            failed = await local.connector.execute_query_all_async(
                "SELECT count(*) AS n FROM procrastinate_jobs WHERE status <> 'succeeded'"
            )
        done = int(span["n"])
        return {
            "dispatch_p50_ms": round(statistics.median(dispatch), 2),
            "dispatch_p99_ms": round(percentile(dispatch, 0.99), 2),
            "jobs_per_s": round(done / float(span["s"]), 1),
            **cpu.per_job(done, "defer"),
            "failed": int(failed[0]["n"]),
        }
    finally:
        for proc in procs:
            proc.kill()
            await proc.wait()
        await drop_database(admin, url)
