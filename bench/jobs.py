"""Job dispatch latency, throughput and CPU per job on PostgreSQL with N worker processes,
beside procrastinate's bare queue doing the same trivial job in the same run.

Prints one JSON line: `dispatch_p50_ms` / `dispatch_p99_ms` (job accepted ->
picked up by a worker, read from the job rows, measured at a steady 50 jobs/s so
workers are idle when each job arrives), `jobs_per_s` (end to end: a burst of
paid jobs accepted through `kernel.paid_calls.call` — the pipeline both fronts call; the
HTTP layer's own cost is measured by bench/paid_calls.py — by 16 concurrent
callers in this process, and completed by the worker processes, from the first
acceptance to the last completion), `cpu_us_per_job` (the burst's CPU per completed
job, utime + stime: this process while it accepts, the worker processes, and the
PostgreSQL backends of the bench's database, each also printed alone), `workers`, `db`.

`procrastinate` holds the same figures for procrastinate (bench/procrastinate_anchor.py)
on a fresh database of its own: the same job (add two numbers), the same number of jobs,
of worker processes and of jobs each worker runs at once, deferred by 16 concurrent
callers; `jobs_cpu_vs_procrastinate` and `jobs_throughput_vs_procrastinate` are ours
divided by its. `load_average` is the machine's one-minute load as ours finished: the
cores are shared, and a busy machine inflates every CPU figure.

The job is trivial (`add_numbers` from tests/support/jobs_plugin.py), paid from
credits through the real pipeline: charge, receipt, job row, NOTIFY wake-up,
claim with SKIP LOCKED, fenced completion, receipt re-sign, notification.

ANALYZED: both sides' databases are analyzed once their 200 paced jobs are done, before the
burst, as autovacuum keeps the statistics of a database in use: a fresh database has none
until its first pass (a minute in), and without them PostgreSQL reads the claim's partial
index as a bitmap, which never marks the entries of finished jobs dead, so each claim
re-reads every job since the last vacuum (the bench would measure a cold start, not the queue).

Run: `make bench-jobs` or `.venv/bin/python bench/jobs.py [--jobs 3000] [--workers 2]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import procrastinate_anchor  # noqa: E402
from common import BurstCpu, create_database, drop_database, percentile  # noqa: E402

OPERATOR = "bench-operator-token"
UNLIMITED = "10000000/60"
PATH = "/v1/tools/test/add-numbers"
WORKER_CONCURRENCY = int(os.environ.get("BENCH_WORKER_CONCURRENCY", "16"))  # jobs each worker runs at once


def bench_env(home: Path, url: str) -> dict[str, str]:
    return {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": url,
        "TOLLWAY_OPERATOR_TOKEN": OPERATOR,
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x0b" * 32).decode(),
        "TOLLWAY_RATE_LIMIT_PAID": UNLIMITED,
        "TOLLWAY_RATE_LIMIT_FREE_READ": UNLIMITED,
    }


async def start_workers(env: dict[str, str], count: int) -> list[asyncio.subprocess.Process]:
    procs = []
    for _ in range(count):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.worker_process",
            env={
                **os.environ,
                **env,
                "PYTHONPATH": str(ROOT),
                "TEST_WORKER_CONCURRENCY": str(WORKER_CONCURRENCY),
            },
            cwd=str(ROOT),
            stdout=asyncio.subprocess.PIPE,
        )
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        if line.strip() != b"ready":
            raise RuntimeError("worker did not start")
        procs.append(proc)
    return procs


async def wait_all_done(ids: list[str], timeout_s: float = 300) -> None:
    from tollway._core.storage import sql

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = await sql.fetch_one("SELECT count(*) AS n FROM tw_jobs WHERE status IN ('pending', 'processing')")
        if int(row["n"]) == 0:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("jobs did not finish in time")


async def run(jobs: int, workers: int, admin: str) -> dict[str, object]:
    from tests.support.jobs_plugin import JobsPlugin
    from tollway._core.basics.request import CallRequest
    from tollway._core.storage import sql
    from tollway._runtime.service import build_kernel, http_app
    from tollway._runtime.settings import load_settings

    url = await create_database(admin, "tollway_bench_jobs")
    home = Path(tempfile.mkdtemp())
    env = bench_env(home, url)
    kernel = build_kernel(
        load_settings(env), plugins=[("jobs", JobsPlugin())], load_installed=False, strict_plugins=True
    )
    await kernel.start()
    procs: list[asyncio.subprocess.Process] = []
    try:
        procs = await start_workers(env, workers)
        app = http_app(kernel, manage_kernel=False)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as client:
            op = {"Authorization": f"Bearer {OPERATOR}"}
            agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=op)).json()
            await client.post(
                "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1000"}, headers=op
            )
            token = (
                await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=op)
            ).json()["token"]
            headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

            async def accept(i: int) -> str:
                # kernel.paid_calls.call is the pipeline both fronts use (HTTP cost is in bench/paid_calls.py)
                req = CallRequest(
                    method="POST",
                    path=PATH,
                    url=f"http://bench.local{PATH}",
                    headers=headers,
                    body=json.dumps({"a": i, "b": 1}).encode(),
                    client_ip="127.0.0.1",
                )
                answer = await kernel.paid_calls.call("add_numbers", req)
                assert answer.status == 202, answer.body
                return answer.body.request_id

            # 1. dispatch latency at a steady 50 jobs/s (workers idle when a job arrives)
            paced = []
            for i in range(200):
                paced.append(await accept(i))
                await asyncio.sleep(0.02)
            await wait_all_done(paced)
            await sql.fetch("ANALYZE")  # statistics, as autovacuum keeps them on a database in use (ANALYZED)
            rows = await sql.fetch("SELECT started_ms - created_ms AS d FROM tw_jobs WHERE status = 'completed'")
            dispatch = [float(r["d"]) for r in rows]

            # 2. throughput: a burst accepted by 16 concurrent clients
            counter = iter(range(jobs))
            burst: list[str] = []

            async def client_loop() -> None:
                for i in counter:
                    burst.append(await accept(i))

            cpu = BurstCpu(admin, url, [p.pid for p in procs])
            await cpu.start()
            t0 = time.time()
            await asyncio.gather(*[client_loop() for _ in range(16)])
            await cpu.handed_over()
            await wait_all_done(burst)
            await cpu.finished()
            row = await sql.fetch_one(
                "SELECT min(created_ms) AS a, max(finished_ms) AS b, count(*) AS n FROM tw_jobs WHERE status = 'completed' AND created_ms >= {}",
                int(t0 * 1000) - 1,
            )
            span_s = (int(row["b"]) - int(row["a"])) / 1000
            failed = await sql.fetch_one("SELECT count(*) AS n FROM tw_jobs WHERE status = 'failed'")
        done = int(row["n"])
        return {
            "db": "postgres",
            "workers": workers,
            "jobs": jobs,
            "dispatch_p50_ms": round(statistics.median(dispatch), 2),
            "dispatch_p99_ms": round(percentile(dispatch, 0.99), 2),
            "jobs_per_s": round(done / span_s, 1),
            **cpu.per_job(done, "accept"),
            "failed": int(failed["n"]),
        }
    finally:
        for proc in procs:
            proc.kill()
            await proc.wait()
        await kernel.stop()
        await drop_database(admin, url)


async def both(jobs: int, workers: int, admin: str) -> dict[str, object]:
    """Ours, then procrastinate's on a fresh database of its own, in the same run."""
    ours = await run(jobs, workers, admin)
    anchor = await procrastinate_anchor.run(admin, jobs, workers, WORKER_CONCURRENCY)
    return {
        **ours,
        "load_average": round(os.getloadavg()[0], 2),
        "procrastinate": anchor,
        "jobs_cpu_vs_procrastinate": round(ours["cpu_us_per_job"] / anchor["cpu_us_per_job"], 3),
        "jobs_throughput_vs_procrastinate": round(ours["jobs_per_s"] / anchor["jobs_per_s"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--postgres", default=os.environ.get("TOLLWAY_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
    )
    args = parser.parse_args()
    import uvloop

    print(json.dumps(uvloop.run(both(args.jobs, args.workers, args.postgres))), flush=True)


if __name__ == "__main__":
    main()
