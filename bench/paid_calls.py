"""Paid calls measured as server CPU per request, beside anchors measured in the same run.

Prints one JSON line per database (SQLite, then PostgreSQL when TOLLWAY_BENCH_POSTGRES_URL
or the default local server answers). Every server runs in a child process under uvicorn
with `tollway serve`'s arguments, is warmed up, then driven by an aiohttp client with
`--concurrency` requests in flight spread over `--agents` agents (each paying credits from
its own balance and x402 from its own wallet). A path's figure is the CPU time (utime +
stime, from /proc) of the serving processes divided by the requests they answered, over
a window of `--n` calls (n/2 x402 pairs), the median of three windows on one server:
  credits_cpu_us      a credits-paid vehicle recall lookup (the service: the vehicles
                      plugin alone, NHTSA's recorded answer replayed in process)
  x402_cpu_us         the 402 and the paid resend with a pre-signed EIP-3009 payment, per pair
  framework_cpu_us    anchor: a bare Litestar app on the same server settings, one POST
                      endpoint decoding a small JSON body and answering a lookup-sized one
  sdk_x402_cpu_us     anchor: the official x402 SDK's resource server (its FastAPI
                      middleware) on one endpoint priced like the lookup, settled by the
                      SDK's facilitator class over an in-memory chain, per pair
  floor_cpu_us        anchor: the one-commit component floor of a credits call
                      (`bench/floor.py`): framework_cpu_us plus the call's own SQL
                      statements replayed on the raw driver in one transaction, the
                      receipt's signature and the tool's run, each measured alone
  wal_bytes_per_credits_call (SQLite)
                      what a credits call adds to SQLite's write-ahead log with the bench's
                      calls in flight (checkpoints held back); `_serial`: one at a time
  pg_cpu_2_vs_1 (PostgreSQL)
                      server + database CPU per credits call (the API processes and the
                      PostgreSQL backends serving the bench's database) with two API
                      processes on one port, divided by the same with one
Ratios: credits_cpu_vs_framework, credits_vs_floor (floor_cpu_us / credits_cpu_us: the
share of the call that is its parts' own work), x402_cpu_vs_framework, x402_cpu_vs_sdk;
history_share as before: what recording a lookup's facts adds to its server CPU (fact
recording switched off, bench only, alternated with it on). Also each path's requests per
second (`_rps`) and the machine's idle share while it ran (`machine_idle`).

The bench refuses to measure (one JSON line saying so, exit status 3) when the machine
is less than 50 % idle as it starts: other work on the cores would slow the servers' CPU
caches and the figures would not be comparable with other runs.

Run: `make bench` or `.venv/bin/python bench/paid_calls.py [--n 2000] [--concurrency 16] [--db both]`;
`--x402-only` measures only the paid paths and the x402 ratios' anchors (the bare framework and the
SDK's server), a few minutes instead of a quarter of an hour, for before/after runs alternated.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import anchors  # noqa: E402
import floor  # noqa: E402
from common import DatabaseCpu, create_database, drop_database  # noqa: E402
from paid_server import HONDA, NO_HISTORY_ENV, bench_kernel  # noqa: E402,F401  (HONDA: the replayed answer)
from serving import drive, idle_since, machine_idle, ramp_calls, ramp_up, served, server_cpu_seconds  # noqa: E402

from tollway._core.basics.money import usdc  # noqa: E402
from tollway._core.storage import sql  # noqa: E402

LOOKUP = {"make": "Honda", "model": "Accord", "model_year": 2021}
PATH = "/v1/tools/lookup/vehicle-recalls"
OPERATOR = "bench-operator-token"
ADMIN = os.environ.get("TOLLWAY_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
WARM = 50  # x402 pairs the service answers before it is measured (after `ramp_up`)


def bench_env(home: Path, database_url: str) -> dict[str, str]:
    return {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": database_url,
        "TOLLWAY_NETWORK": "local",
        "TOLLWAY_OPERATOR_TOKEN": OPERATOR,
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x09" * 32).decode(),
        # a few agents hammering one tool: lift the per-agent limits (still counted)
        "TOLLWAY_RATE_LIMIT_LOOKUP": "10000000/60",
        "TOLLWAY_RATE_LIMIT_FREE_READ": "10000000/60",
        "TOLLWAY_SERVE_JOB_WORKERS": "0",  # `tollway serve --workers 0`: no job runs here
    }


async def setup_payers(client: Any, calls: int, payments: int, price: int, agents: int) -> tuple[list[str], list[str]]:
    """`agents` agents, each with an access token and credits for its share of `calls`
    calls, and `payments` pre-signed x402 payments, payment i from wallet i % agents."""
    from eth_account import Account

    from tollway._core.payments.eip3009 import make_payment_header, sign_authorization
    from tollway._core.payments.networks import get_network

    op = {"Authorization": f"Bearer {OPERATOR}"}
    tokens = []
    for a in range(agents):
        agent = (
            await client.post("/v1/tools/internal/agents/register", json={"name": f"bench-{a}"}, headers=op)
        ).json()
        share = calls // agents + 1
        await client.post(
            "/v1/tools/internal/credits/grant",
            json={"agent_id": agent["agent_id"], "amount": usdc(share * price + 1_000_000)},
            headers=op,
        )
        tokens.append(
            (
                await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=op)
            ).json()["token"]
        )

    first = await client.post(PATH, json=LOOKUP)
    required = json.loads(base64.b64decode(first.headers["PAYMENT-REQUIRED"]))["accepts"][0]
    payers = [Account.create() for _ in range(agents)]
    for payer in payers:
        share = payments // agents + 1
        await client.post(
            "/v1/tools/internal/chain/fund",
            json={"address": payer.address, "amount": usdc(share * price + 1_000_000)},
            headers=op,
        )
    network = get_network("local")
    now = int(time.time())
    headers = []
    for i in range(payments):
        auth, sig = sign_authorization(
            payers[i % agents],
            network,
            to=required["payTo"],
            value=int(required["amount"]),
            valid_after=now - 10,
            valid_before=now + 3600,
        )
        headers.append(make_payment_header(network, required, auth, sig))
    return tokens, headers


REPEATS = 3  # measurement windows per path; their median is reported
MIN_IDLE = 0.5


async def setup_credits(client: Any, calls: int, price: int, agents: int) -> list[dict[str, str]]:
    tokens, _ = await setup_payers(client, calls, 0, price, agents)
    return [{"Authorization": f"Bearer {token}"} for token in tokens]


async def cpu_windows(
    n: int,
    concurrency: int,
    one: Callable[[int], Awaitable[None]],
    cpu: Callable[[], Awaitable[float]],
) -> dict[str, float]:
    """REPEATS windows of `n` calls of `one`: the median CPU µs per call and calls per second."""
    per_call, rates = [], []
    for w in range(REPEATS):
        before = await cpu()
        measured = await drive(n, concurrency, lambda i: one(w * n + i))
        per_call.append((await cpu() - before) / n * 1e6)
        rates.append(measured["rps"])
    return {"cpu_us": round(statistics.median(per_call), 1), "rps": round(statistics.median(rates), 1)}


def process_cpu(client: Any) -> Callable[[], Awaitable[float]]:
    async def seconds() -> float:
        return sum(server_cpu_seconds(client.server_pid))

    return seconds


def paid_paths(
    client: Any, tokens: list[str], payments: list[str]
) -> tuple[Callable[[int], Awaitable[None]], Callable[[int], Awaitable[None]]]:
    """(credits call i, x402 pair i): call i paid from agent i's credits (of `tokens`, round
    robin), pair i a 402 then the resend paid with `payments[i]`."""
    auths = [{"Authorization": f"Bearer {token}"} for token in tokens]

    async def credits_call(i: int) -> None:
        resp = await client.post(PATH, json=LOOKUP, headers=auths[i % len(auths)])
        assert resp.status_code == 200, resp.text

    async def x402_call(i: int) -> None:
        quote = await client.post(PATH, json=LOOKUP)
        assert quote.status_code == 402, quote.text
        paid = await client.post(
            PATH, json=LOOKUP, headers={"payment-signature": payments[i], "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert paid.status_code == 200, paid.text

    return credits_call, x402_call


async def measure(
    client: Any, n: int, concurrency: int, agents: int, cpu: Callable[[], Awaitable[float]], x402: bool = True
) -> dict:
    """The service's credits path and (with `x402`) its x402 path, REPEATS windows each after a warm-up."""
    pairs = n // 2 or 1
    tokens, payments = await setup_payers(
        client, REPEATS * n + ramp_calls(concurrency), REPEATS * pairs + WARM if x402 else 0, 5000, agents
    )
    credits_call, x402_call = paid_paths(client, tokens, payments)
    await ramp_up(concurrency, credits_call)
    if x402:
        await drive(WARM, concurrency, lambda i: x402_call(REPEATS * pairs + i))
    idle = machine_idle()
    credits = await cpu_windows(n, concurrency, credits_call, cpu)
    out = {"credits_cpu_us": credits["cpu_us"], "credits_rps": credits["rps"]}
    if x402:
        paid = await cpu_windows(pairs, concurrency, x402_call, cpu)
        out.update({"x402_cpu_us": paid["cpu_us"], "x402_pairs_per_s": paid["rps"]})
    out["machine_idle"] = round(idle_since(idle), 2)
    return out


@contextlib.asynccontextmanager
async def inprocess_service(db: str, url: str, home: Path, *, checkpoints: bool = True) -> AsyncIterator[Any]:
    """(kernel, httpx client over its ASGI app) of a bench kernel in this process (without
    `checkpoints`, SQLite's checkpointer is held back so its write-ahead log only grows)."""
    from tollway._runtime.service import http_app
    from tollway._runtime.settings import load_settings

    kernel = bench_kernel(load_settings(bench_env(home, url)))
    if not checkpoints:
        kernel.db.engine.checkpoint_every_s = 1e9  # before the engine's first use starts the checkpointer
    await kernel.start()
    if db == "postgres":
        await kernel.db.truncate_all()
        await kernel.receipts.publish_key()
    try:
        transport = httpx.ASGITransport(app=http_app(kernel, manage_kernel=False), client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as client:
            yield kernel, client
    finally:
        await kernel.stop()


async def component_floor(db: str, url: str, home: Path, n: int = 2000) -> dict[str, Any]:
    """The parts of a credits call measured alone in this process (`bench/floor.py`)."""
    async with inprocess_service(db, url, home) as (kernel, client):
        auth = (await setup_credits(client, 60, 10_000, 1))[0]

        async def call() -> None:
            resp = await client.post(PATH, json=LOOKUP, headers=auth)
            assert resp.status_code == 200, resp.text

        for _ in range(50):  # warm: the upstream answer cached, the lookup's facts recorded once
            await call()
        agent = await sql.fetch_one("SELECT id FROM tw_agents WHERE name = {}", "bench-0")
        return await floor.component_floor(kernel, call, agent["id"], LOOKUP, n)


async def wal_bytes(url: str, home: Path, concurrency: int, agents: int, calls: int = 800) -> dict[str, float]:
    """SQLite: bytes a credits call adds to the write-ahead log (every page a commit writes is
    one frame: the page and a 24-byte header), with `concurrency` calls in flight and one at
    a time, after a warm-up, the checkpointer held back so the log only grows."""
    async with inprocess_service("sqlite", url, home, checkpoints=False) as (_, client):
        auths = await setup_credits(client, 2 * calls + 100, 10_000, agents)

        async def call(i: int) -> None:
            resp = await client.post(PATH, json=LOOKUP, headers=auths[i % agents])
            assert resp.status_code == 200, resp.text

        await drive(100, concurrency, call)
        log = Path(url.removeprefix("sqlite:///") + "-wal")
        out = {}
        for name, inflight in (("wal_bytes_per_credits_call", concurrency), ("wal_bytes_per_credits_call_serial", 1)):
            before = log.stat().st_size
            await drive(calls, inflight, call)
            out[name] = round((log.stat().st_size - before) / calls)
        return out


async def over_http(
    url: str,
    home: Path,
    n: int,
    concurrency: int,
    agents: int,
    processes: int = 1,
    history: bool = True,
    database: DatabaseCpu | None = None,
    x402: bool = True,
) -> dict[str, Any]:
    """The service served as `tollway serve --processes N --workers 0` serves it (without
    `history`, its calls record no facts: the anchor of what recording costs); with
    `database`, the PostgreSQL backends' CPU counts too."""
    env = bench_env(home, url) if history else {**bench_env(home, url), NO_HISTORY_ENV: "1"}
    async with served(
        "paid_server:app", env=env, concurrency=concurrency, processes=processes, ready_path="/healthz"
    ) as client:
        api = process_cpu(client)

        async def cpu() -> float:
            return await api() + (await database.seconds() if database else 0.0)

        return await measure(client, n, concurrency, agents, cpu, x402)


async def history_share(urls: list[str], homes: list[Path], n: int, concurrency: int, agents: int) -> dict[str, Any]:
    """Credits calls' server CPU with and without fact recording, alternated on fresh databases."""
    on: list[float] = []
    off: list[float] = []
    for i, (url, home) in enumerate(zip(urls, homes)):
        recording = i % 2 == 0
        run = await over_http(url, home, n, concurrency, agents, history=recording, x402=False)
        (on if recording else off).append(run["credits_cpu_us"])
    return {
        "credits_history_cpu_us": min(on),
        "credits_no_history_cpu_us": min(off),
        "history_share": round(min(on) / min(off) - 1, 3),
    }


async def framework(n: int, concurrency: int) -> dict[str, float]:
    async with served("anchors:framework_app", env={}, concurrency=concurrency) as client:

        async def call(i: int) -> None:
            resp = await client.post(anchors.PATH, json=LOOKUP)
            assert resp.status_code == 200, resp.text

        await ramp_up(concurrency, call)
        # five times the calls: its CPU per call is a few clock ticks (10 ms) per 2,000 calls
        measured = await cpu_windows(5 * n, concurrency, call, process_cpu(client))
        return {"framework_cpu_us": measured["cpu_us"], "framework_rps": measured["rps"]}


async def sdk_x402(n: int, concurrency: int) -> dict[str, float]:
    from eth_account import Account

    payer = Account.create()
    async with served("anchors:sdk_app", env={anchors.SDK_PAYER_ENV: payer.address}, concurrency=concurrency) as client:
        first = await client.post(anchors.PATH, json=LOOKUP)
        assert first.status_code == 402, first.text
        required = anchors.payment_required(first.headers["PAYMENT-REQUIRED"])
        pairs = n // 2 or 1
        payments = anchors.sdk_payments(
            payer, required["accepts"][0], required.get("resource"), REPEATS * pairs + ramp_calls(concurrency)
        )

        async def pair(i: int) -> None:
            quote = await client.post(anchors.PATH, json=LOOKUP)
            assert quote.status_code == 402, quote.text
            paid = await client.post(anchors.PATH, json=LOOKUP, headers={"payment-signature": payments[i]})
            assert paid.status_code == 200 and "PAYMENT-RESPONSE" in paid.headers, paid.text

        await ramp_up(concurrency, lambda i: pair(REPEATS * pairs + i))
        measured = await cpu_windows(pairs, concurrency, pair, process_cpu(client))
        return {"sdk_x402_cpu_us": measured["cpu_us"], "sdk_x402_pairs_per_s": measured["rps"]}


def ratio(row: dict[str, Any], a: str, b: str) -> float:
    return round(row[a] / row[b], 3)


def ratios(row: dict[str, Any]) -> dict[str, float]:
    out = {
        "credits_cpu_vs_framework": ratio(row, "credits_cpu_us", "framework_cpu_us"),
        "credits_vs_floor": ratio(row, "floor_cpu_us", "credits_cpu_us"),
        "x402_cpu_vs_framework": ratio(row, "x402_cpu_us", "framework_cpu_us"),
        "x402_cpu_vs_sdk": ratio(row, "x402_cpu_us", "sdk_x402_cpu_us"),
    }
    if "processes_2_cpu_us" in row:
        out["pg_cpu_2_vs_1"] = ratio(row, "processes_2_cpu_us", "processes_1_cpu_us")
    return out


def idle_now(seconds: float = 3.0) -> float:
    start = machine_idle()
    time.sleep(seconds)
    return round(idle_since(start), 2)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per window (x402: n/2 pairs)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument(
        "--agents",
        type=int,
        default=None,
        help="agents (and x402 wallets) the calls spread over (default: one per request in flight)",
    )
    parser.add_argument(
        "--x402-only",
        action="store_true",
        help="only the paid paths and the anchors of the x402 ratios (bare framework, SDK server): no floor, "
        "history share, WAL or process scaling",
    )
    parser.add_argument(
        "--min-idle",
        type=float,
        default=MIN_IDLE,
        help="the least idle share of the machine at the start to measure at all (printed with the figures)",
    )
    args = parser.parse_args()
    n, concurrency = args.n, args.concurrency
    agents = max(1, args.agents or concurrency)

    idle = idle_now()
    if idle < args.min_idle:
        print(json.dumps({"refused": "the machine is busy: CPU per request would not compare", "machine_idle": idle}))
        sys.exit(3)
    shared: dict[str, Any] = {"machine_idle_at_start": idle, "crypto_floor_per_s": round(anchors.crypto_floor(), 1)}
    shared.update(await sdk_x402(n, concurrency))
    with tempfile.TemporaryDirectory() as tmp:
        dbs = ["sqlite"] if args.db == "sqlite" else ["postgres"] if args.db == "postgres" else ["sqlite", "postgres"]
        for db in dbs:
            if db == "postgres":
                try:
                    fresh = [await create_database(ADMIN, "tollway_bench") for _ in range(8)]
                except Exception:
                    print(json.dumps({"db": "postgres", "skipped": "no PostgreSQL server answered"}), flush=True)
                    continue
            else:
                fresh = [f"sqlite:///{tmp}/sqlite-{i}/tollway.db" for i in range(8)]
            homes = [Path(tmp) / f"{db}-{i}" for i in range(8)]
            row: dict[str, Any] = {"db": db, "n": n, "concurrency": concurrency, "agents": agents}
            try:
                row.update(await framework(n, concurrency))
                row.update(await over_http(fresh[0], homes[0], n, concurrency, agents))
                if not args.x402_only:
                    row.update(await others(db, fresh[1:], homes[1:], n, concurrency, agents))
            finally:
                if db == "postgres":
                    for url in fresh:
                        await drop_database(ADMIN, url)
            row.update(shared)
            if args.x402_only:  # the ratios its anchors make
                row["x402_cpu_vs_framework"] = ratio(row, "x402_cpu_us", "framework_cpu_us")
                row["x402_cpu_vs_sdk"] = ratio(row, "x402_cpu_us", "sdk_x402_cpu_us")
            else:
                row["floor_cpu_us"] = round(
                    row["framework_cpu_us"] + row["floor_sql_us"] + row["floor_sign_us"] + row["floor_tool_us"], 1
                )
                row.update(ratios(row))
            print(json.dumps(row), flush=True)


async def others(db: str, fresh: list[str], homes: list[Path], n: int, concurrency: int, agents: int) -> dict:
    """The figures beside the paid paths: the component floor, history's share, and the WAL
    bytes (SQLite) or the scaling over two API processes (PostgreSQL), on fresh databases."""
    row = await component_floor(db, fresh[0], homes[0])
    row.update(await history_share(fresh[1:5], homes[1:5], n, concurrency, agents))
    if db == "postgres":
        for processes, url, home in ((1, fresh[5], homes[5]), (2, fresh[6], homes[6])):
            run = await over_http(
                url, home, n, concurrency, agents, processes=processes, database=DatabaseCpu(ADMIN, url), x402=False
            )
            row[f"processes_{processes}_cpu_us"] = run["credits_cpu_us"]
    else:
        row.update(await wal_bytes(fresh[5], homes[5], concurrency, agents))
    return row


if __name__ == "__main__":
    asyncio.run(main())
