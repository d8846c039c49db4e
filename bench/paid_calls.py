"""Paid-call throughput: credits-paid and x402-paid vehicle recall lookups, beside anchors
measured in the same run.

Prints one JSON line per database (SQLite, then PostgreSQL when
TOLLWAY_BENCH_POSTGRES_URL or the default local server answers). Each path gives
`<path>_rps`, `<path>_p50_ms` and `<path>_p99_ms`:
  credits_inprocess      credits-paid lookup through the ASGI app in this process
  x402_inprocess         402, then the paid resend with a pre-signed EIP-3009 payment
  credits_http           credits-paid lookup over HTTP on 127.0.0.1: the service in a
                         child process, one API process (the factory of
                         `tollway serve --processes N`, only the vehicles plugin, NHTSA
                         replayed in-process from plugins/vehicles/tests/fixtures)
  x402_http              the 402 + paid resend pair over HTTP, same server
  credits_http_history_cpu_us, credits_http_no_history_cpu_us
                         the credits path's server CPU per call with fact recording on and
                         switched off (bench only), runs alternated twice on fresh
                         databases, the least of each kept: the anchor of what the history
                         costs a lookup
  credits_http_processes_2, x402_http_processes_2 (PostgreSQL only)
                         the same with two API processes on one port
  framework              anchor: a bare Litestar app, one POST endpoint decoding a small
                         JSON body and answering a body the size of a lookup's (~2.7 kB)
  sdk_x402               anchor: the official x402 SDK's resource server (its FastAPI
                         middleware) on one endpoint priced like the lookup, settled by
                         the SDK's facilitator class with its exact-EVM scheme over an
                         in-memory chain (signatures recovered for real, balances and
                         nonces in a dict); 402 + paid resend pairs
  wal_bytes_per_credits_call (SQLite only)
                         what one credits call adds to SQLite's write-ahead log, calls
                         in process one at a time (checkpoints held back): the pages
                         its commits write
Beside them:
  crypto_floor_per_s     anchor: one secp256k1 key recovery of an EIP-712 digest
                         (coincurve) plus one Ed25519 signature of a 600-byte receipt
                         (PyNaCl), per second, in one process: the signature work no
                         x402-paid call avoids
  http_cpu_busy, http_processes_2_cpu_busy
                         the share of one core each API process used while its credits
                         and x402 paths were measured (from /proc): near 1, the process
                         is the bottleneck; well under, it waits (database, CPU)
  credits_http_cpu_us, x402_http_cpu_us (and _processes_2_)
                         the API processes' CPU time per call (per pair for x402), in
                         microseconds: what a call costs the server, however busy the
                         machine was
  http_machine_idle, http_processes_2_machine_idle
                         the share of the machine's CPU (all cores) left idle meanwhile:
                         near 0, the machine itself (client, servers, database and
                         whatever else runs on it) limits the figures

An x402 "request" is the 402 and the paid resend together. Every server runs in a child
process under uvicorn with `tollway serve`'s arguments (uvloop and httptools when
installed), is warmed up, then driven by the same aiohttp client with `--concurrency`
requests in flight: n calls per credits/framework path, n/2 pairs per x402 path. The calls
are spread over `--agents` agents (default one per request in flight: many agents paying
at once, as a shared service sees them; `--agents 1` measures one agent's calls queueing
on its own balance row), each paying by credits from its own balance and by x402 from
its own wallet. The
warm-up opens the client's connections one at a time (bench/serving.py `ramp_up`). The
SDK and crypto anchors do not depend on the database: measured once, shown in every row;
the framework is measured beside each row's service.

Ratios (3 decimals): credits_http_vs_framework = credits_http_rps / framework_rps (what
the service keeps of the bare framework); x402_http_vs_crypto_floor = x402_http_rps /
crypto_floor_per_s (the share of the signature floor reached); x402_vs_sdk =
x402_http_rps / sdk_x402_rps; history_share = credits_http_history_cpu_us /
credits_http_no_history_cpu_us - 1 (what recording a lookup's facts adds to its server
CPU); api_processes_2_vs_1 (PostgreSQL) =
credits_http_processes_2_rps / credits_http_rps.

Run: `make bench` or `.venv/bin/python bench/paid_calls.py [--n 2000] [--concurrency 16] [--db both]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import anchors  # noqa: E402
from common import create_database, drop_database  # noqa: E402
from paid_server import HONDA, NO_HISTORY_ENV, bench_kernel  # noqa: E402,F401  (HONDA: the replayed answer)
from serving import drive, figures, machine_idle, ramp_calls, ramp_up, served, server_cpu_seconds  # noqa: E402

from tollway._core.basics.money import usdc  # noqa: E402

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


async def measure(
    client: Any,
    n: int,
    concurrency: int,
    suffix: str,
    agents: int,
    cpu: Callable[[], list[float]] | None = None,
    x402: bool = True,
) -> dict[str, Any]:
    """The service's credits path (n calls) and x402 path (n/2 pairs), after a warm-up;
    call i is agent i % agents's (x402: wallet i % agents pays); with `cpu` (the server
    processes' CPU seconds so far), how busy each process was."""
    pairs, warm = n // 2 or 1, min(WARM, n)
    tokens, payments = await setup_payers(
        client, n + ramp_calls(concurrency), pairs + warm if x402 else 0, 5000, agents
    )
    auths = [{"Authorization": f"Bearer {token}"} for token in tokens]

    async def credits_call(i: int) -> None:
        resp = await client.post(PATH, json=LOOKUP, headers=auths[i % agents])
        assert resp.status_code == 200, resp.text

    async def x402_call(i: int) -> None:
        quote = await client.post(PATH, json=LOOKUP)
        assert quote.status_code == 402, quote.text
        paid = await client.post(
            PATH, json=LOOKUP, headers={"payment-signature": payments[i], "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert paid.status_code == 200, paid.text

    await ramp_up(concurrency, credits_call)
    if x402:
        await drive(warm, concurrency, lambda i: x402_call(pairs + i))
    before, start, idle = cpu() if cpu else [], time.perf_counter(), machine_idle()
    out: dict[str, Any] = figures(f"credits_{suffix}", await drive(n, concurrency, credits_call))
    middle = cpu() if cpu else []
    if x402:
        out.update(figures(f"x402_{suffix}", await drive(pairs, concurrency, x402_call)))
    if cpu:
        after = cpu()
        # the API processes' CPU time per call (per pair for x402), whatever else the machine ran
        out[f"credits_{suffix}_cpu_us"] = round((sum(middle) - sum(before)) / n * 1e6)
        if x402:
            out[f"x402_{suffix}_cpu_us"] = round((sum(after) - sum(middle)) / pairs * 1e6)
        elapsed = time.perf_counter() - start
        out[f"{suffix}_cpu_busy"] = [round((b - a) / elapsed, 2) for a, b in zip(before, cpu())]
        idle_after = machine_idle()
        out[f"{suffix}_machine_idle"] = round((idle_after[0] - idle[0]) / max(1, idle_after[1] - idle[1]), 2)
    return out


@contextlib.asynccontextmanager
async def inprocess_client(db: str, url: str, home: Path, *, checkpoints: bool = True) -> AsyncIterator[Any]:
    """An httpx client over the ASGI app of a bench kernel in this process (without
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
            yield client
    finally:
        await kernel.stop()


async def inprocess(db: str, url: str, home: Path, n: int, concurrency: int, agents: int) -> dict[str, float]:
    async with inprocess_client(db, url, home) as client:
        return await measure(client, n, concurrency, "inprocess", agents)


async def wal_bytes(url: str, home: Path, calls: int = 400) -> dict[str, float]:
    """SQLite: bytes a credits call adds to the write-ahead log (every page a commit writes is
    one frame: the page and a 24-byte header), one call at a time after a warm-up, with the
    checkpointer held back so the log only grows."""
    async with inprocess_client("sqlite", url, home, checkpoints=False) as client:
        tokens, _ = await setup_payers(client, calls + 50, 0, 10_000, 1)
        auth = {"Authorization": f"Bearer {tokens[0]}"}

        async def call() -> None:
            resp = await client.post(PATH, json=LOOKUP, headers=auth)
            assert resp.status_code == 200, resp.text

        for _ in range(50):
            await call()
        log = Path(url.removeprefix("sqlite:///") + "-wal")
        before = log.stat().st_size
        for _ in range(calls):
            await call()
        return {"wal_bytes_per_credits_call": round((log.stat().st_size - before) / calls)}


async def over_http(
    url: str,
    home: Path,
    n: int,
    concurrency: int,
    agents: int,
    processes: int = 1,
    history: bool = True,
    suffix: str | None = None,
    x402: bool = True,
) -> dict[str, float]:
    """The service served as `tollway serve --processes N --workers 0` serves it (without
    `history`, its calls record no facts: the anchor of what recording costs)."""
    suffix = suffix or ("http" if processes == 1 else f"http_processes_{processes}")
    env = bench_env(home, url) if history else {**bench_env(home, url), NO_HISTORY_ENV: "1"}
    async with served(
        "paid_server:app", env=env, concurrency=concurrency, processes=processes, ready_path="/healthz"
    ) as client:
        return await measure(
            client, n, concurrency, suffix, agents, cpu=lambda: server_cpu_seconds(client.server_pid), x402=x402
        )


async def history_share(urls: list[str], homes: list[Path], n: int, concurrency: int, agents: int) -> dict[str, Any]:
    """Credits calls' server CPU with and without fact recording, alternated twice on fresh
    databases; the least of each pair of runs (the one least disturbed) is compared."""
    on: list[int] = []
    off: list[int] = []
    for i, (url, home) in enumerate(zip(urls, homes)):
        recording = i % 2 == 0
        run = await over_http(url, home, n, concurrency, agents, history=recording, suffix="history_run", x402=False)
        (on if recording else off).append(run["credits_history_run_cpu_us"])
    return {
        "credits_http_history_cpu_us": min(on),
        "credits_http_no_history_cpu_us": min(off),
        "history_share": round(min(on) / min(off) - 1, 3),
    }


async def framework(n: int, concurrency: int) -> dict[str, float]:
    async with served("anchors:framework_app", env={}, concurrency=concurrency) as client:

        async def call(i: int) -> None:
            resp = await client.post(anchors.PATH, json=LOOKUP)
            assert resp.status_code == 200, resp.text

        await ramp_up(concurrency, call)
        return figures("framework", await drive(n, concurrency, call))


async def sdk_x402(n: int, concurrency: int) -> dict[str, float]:
    from eth_account import Account

    payer = Account.create()
    async with served("anchors:sdk_app", env={anchors.SDK_PAYER_ENV: payer.address}, concurrency=concurrency) as client:
        first = await client.post(anchors.PATH, json=LOOKUP)
        assert first.status_code == 402, first.text
        required = anchors.payment_required(first.headers["PAYMENT-REQUIRED"])
        pairs = n // 2 or 1
        payments = anchors.sdk_payments(
            payer, required["accepts"][0], required.get("resource"), pairs + ramp_calls(concurrency)
        )

        async def pair(i: int) -> None:
            quote = await client.post(anchors.PATH, json=LOOKUP)
            assert quote.status_code == 402, quote.text
            paid = await client.post(anchors.PATH, json=LOOKUP, headers={"payment-signature": payments[i]})
            assert paid.status_code == 200 and "PAYMENT-RESPONSE" in paid.headers, paid.text

        await ramp_up(concurrency, lambda i: pair(pairs + i))
        return figures("sdk_x402", await drive(pairs, concurrency, pair))


def ratios(row: dict[str, Any]) -> dict[str, float]:
    def ratio(a: str, b: str) -> float:
        return round(row[a] / row[b], 3)

    out = {
        "credits_http_vs_framework": ratio("credits_http_rps", "framework_rps"),
        "x402_http_vs_crypto_floor": ratio("x402_http_rps", "crypto_floor_per_s"),
        "x402_vs_sdk": ratio("x402_http_rps", "sdk_x402_rps"),
    }
    if "credits_http_processes_2_rps" in row:
        out["api_processes_2_vs_1"] = ratio("credits_http_processes_2_rps", "credits_http_rps")
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per credits/framework path (x402 paths: n/2 pairs)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument(
        "--agents",
        type=int,
        default=None,
        help="agents (and x402 wallets) the calls spread over (default: one per request in flight)",
    )
    args = parser.parse_args()
    n, concurrency = args.n, args.concurrency
    agents = max(1, args.agents or concurrency)

    shared: dict[str, float] = {"crypto_floor_per_s": round(anchors.crypto_floor(), 1)}
    shared.update(await sdk_x402(n, concurrency))
    with tempfile.TemporaryDirectory() as tmp:
        dbs = ["sqlite"] if args.db == "sqlite" else ["postgres"] if args.db == "postgres" else ["sqlite", "postgres"]
        for db in dbs:
            if db == "postgres":
                try:
                    fresh = [await create_database(ADMIN, "tollway_bench") for _ in range(7)]
                except Exception:
                    print(json.dumps({"db": "postgres", "skipped": "no PostgreSQL server answered"}), flush=True)
                    continue
            else:
                fresh = [f"sqlite:///{tmp}/sqlite-{i}/tollway.db" for i in range(8)]
            row: dict[str, Any] = {"db": db, "n": n, "concurrency": concurrency, "agents": agents}
            try:
                row.update(await inprocess(db, fresh[0], Path(tmp) / f"{db}-0", n, concurrency, agents))
                row.update(await framework(n, concurrency))
                row.update(await over_http(fresh[1], Path(tmp) / f"{db}-1", n, concurrency, agents))
                row.update(
                    await history_share(
                        fresh[3:7], [Path(tmp) / f"{db}-{i}" for i in range(3, 7)], n, concurrency, agents
                    )
                )
                if db == "postgres":
                    row.update(await over_http(fresh[2], Path(tmp) / f"{db}-2", n, concurrency, agents, processes=2))
                else:
                    row.update(await wal_bytes(fresh[7], Path(tmp) / f"{db}-7"))
            finally:
                if db == "postgres":
                    for url in fresh:
                        await drop_database(ADMIN, url)
            row.update(shared)
            row.update(ratios(row))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
