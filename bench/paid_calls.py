"""Paid-call throughput: credits-paid and x402-paid vehicle recall lookups.

Prints one JSON line per database (SQLite, then PostgreSQL when
TOLLWAY_BENCH_POSTGRES_URL or the default local server answers) with requests/s
and p50/p99 latency for four paths:
  credits_inprocess   credits-paid lookup through the ASGI app in this process
  x402_inprocess      402 then paid resend with a pre-signed EIP-3009 payment
  credits_http        the same over HTTP on 127.0.0.1 (uvicorn in a child process)
  x402_http           the same over HTTP
An x402 "request" counts the 402 and the paid resend together. NHTSA is replayed
in-process from the recorded file in plugins/vehicles/tests/fixtures (no network).

Run: `make bench` or `.venv/bin/python bench/paid_calls.py [--n 2000] [--concurrency 16]`.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import percentile  # noqa: E402

HONDA = ROOT / "plugins" / "vehicles" / "tests" / "fixtures" / "nhtsa_recalls" / "recallsByVehicle_honda_accord_2021_trimmed.json"
LOOKUP = {"make": "Honda", "model": "Accord", "model_year": 2021}
PATH = "/v1/tools/lookup/vehicle-recalls"
OPERATOR = "bench-operator-token"


def replay_transport() -> httpx.MockTransport:
    """Answers NHTSA's recallsByVehicle with the real recorded Honda Accord 2021 response."""
    body = HONDA.read_bytes()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/recalls/recallsByVehicle"):
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        return httpx.Response(404, content=b"{}")

    return httpx.MockTransport(handler)


def bench_env(home: Path, database_url: str) -> dict[str, str]:
    return {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": database_url,
        "TOLLWAY_NETWORK": "local",
        "TOLLWAY_OPERATOR_TOKEN": OPERATOR,
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x09" * 32).decode(),
        # the bench is one agent hammering one tool: lift the per-agent limit (still counted)
        "TOLLWAY_RATE_LIMIT_LOOKUP": "10000000/60",
        "TOLLWAY_RATE_LIMIT_FREE_READ": "10000000/60",
    }


async def drive(n: int, concurrency: int, one) -> dict[str, float]:
    """Run `one(i)` n times with `concurrency` workers; returns rps, p50, p99 (ms)."""
    latencies: list[float] = []
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            t0 = time.perf_counter()
            await one(i)
            latencies.append((time.perf_counter() - t0) * 1000)

    start = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    elapsed = time.perf_counter() - start
    return {"rps": n / elapsed, "p50_ms": statistics.median(latencies), "p99_ms": percentile(latencies, 0.99)}


async def setup_payers(client: httpx.AsyncClient, n: int, price: int) -> tuple[str, list[str]]:
    """An access token with credits for n calls, and n pre-signed x402 payments."""
    from eth_account import Account

    from core.payments.eip3009 import make_payment_header, sign_authorization
    from core.payments.networks import get_network

    op = {"Authorization": f"Bearer {OPERATOR}"}
    agent = (await client.post("/v1/tools/internal/agents/register", json={"name": "bench"}, headers=op)).json()
    await client.post("/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": str(n * price / 1e6 + 1)}, headers=op)
    token = (await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=op)).json()["token"]

    first = await client.post(PATH, json=LOOKUP)
    required = json.loads(base64.b64decode(first.headers["PAYMENT-REQUIRED"]))["accepts"][0]
    payer = Account.create()
    await client.post("/v1/tools/internal/chain/fund", json={"address": payer.address, "amount": str(n * price / 1e6 + 1)}, headers=op)
    network = get_network("local")
    now = int(time.time())
    headers = []
    for _ in range(n):
        auth, sig = sign_authorization(payer, network, to=required["payTo"], value=int(required["amount"]), valid_after=now - 10, valid_before=now + 3600)
        headers.append(make_payment_header(network, required, auth, sig))
    return token, headers


async def measure(client: httpx.AsyncClient, n: int, concurrency: int, token: str, payments: list[str], prefix: str) -> dict[str, float]:
    auth = {"Authorization": f"Bearer {token}"}

    async def credits_call(i: int) -> None:
        resp = await client.post(PATH, json=LOOKUP, headers=auth)
        assert resp.status_code == 200, resp.text

    async def x402_call(i: int) -> None:
        quote = await client.post(PATH, json=LOOKUP)
        assert quote.status_code == 402, quote.text
        paid = await client.post(PATH, json=LOOKUP, headers={"payment-signature": payments[i], "X-Quote-ID": quote.json()["quote_id"]})
        assert paid.status_code == 200, paid.text

    await drive(min(50, n), concurrency, credits_call)  # warm up
    out: dict[str, float] = {}
    for name, fn, count in (("credits", credits_call, n), ("x402", x402_call, len(payments))):
        figures = await drive(count, concurrency, fn)
        out[f"{name}_{prefix}_rps"] = round(figures["rps"], 1)
        out[f"{name}_{prefix}_p50_ms"] = round(figures["p50_ms"], 2)
        out[f"{name}_{prefix}_p99_ms"] = round(figures["p99_ms"], 2)
    return out


async def inprocess(db: str, url: str, home: Path, n: int, concurrency: int) -> dict[str, float]:
    from runtime.plugins import load_entry_point_plugins
    from runtime.service import build_kernel, http_app
    from runtime.settings import load_settings

    kernel = build_kernel(load_settings(bench_env(home, url)), load_installed=False, http_transport=replay_transport())
    load_entry_point_plugins(kernel, strict=True, only={"tollway_vehicles"})
    await kernel.start()
    if db == "postgres":
        await kernel.db.truncate_all()
        await kernel.receipts.publish_key()
    try:
        app = http_app(kernel, manage_kernel=False)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as client:
            token, payments = await setup_payers(client, n, 5000)
            return await measure(client, n, concurrency, token, payments[: n // 2 or 1], "inprocess")
    finally:
        await kernel.stop()


SERVER = """
import sys, uvicorn
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from paid_calls import replay_transport
from runtime.plugins import load_entry_point_plugins
from runtime.service import build_kernel, http_app
from runtime.settings import load_settings
kernel = build_kernel(load_settings(), load_installed=False, http_transport=replay_transport())
load_entry_point_plugins(kernel, strict=True, only={{"tollway_vehicles"}})
uvicorn.run(http_app(kernel), host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Answer:
    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status_code, self.headers, self._body = status, headers, body

    @property
    def text(self) -> str:
        return self._body.decode()

    def json(self) -> Any:
        return json.loads(self._body)


class FastClient:
    """The few httpx-style calls the bench makes, over aiohttp: httpx's own CPU cost
    per request would otherwise share the machine's second core with the server
    and cap what the HTTP figures can show."""

    def __init__(self, base_url: str, connections: int) -> None:
        import aiohttp

        self.base_url = base_url
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections))

    async def request(self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None) -> _Answer:
        async with self.session.request(method, self.base_url + path, json=json, headers=headers) as resp:
            return _Answer(resp.status, resp.headers, await resp.read())

    async def post(self, path: str, *, json: Any = None, headers: dict[str, str] | None = None) -> _Answer:
        return await self.request("POST", path, json=json, headers=headers)

    async def get(self, path: str, *, headers: dict[str, str] | None = None) -> _Answer:
        return await self.request("GET", path, headers=headers)

    async def close(self) -> None:
        await self.session.close()


async def over_http(db: str, url: str, home: Path, n: int, concurrency: int) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, **bench_env(home, url)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(root=str(ROOT), bench=str(ROOT / "bench"), port=port)], env=env, cwd=str(ROOT)
    )
    client = FastClient(f"http://127.0.0.1:{port}", concurrency * 2)
    try:
        for _ in range(200):
            try:
                if (await client.get("/healthz")).status_code == 200:
                    break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            raise RuntimeError("server did not start")
        token, payments = await setup_payers(client, n, 5000)
        return await measure(client, n, concurrency, token, payments[: n // 2 or 1], "http")
    finally:
        await client.close()
        proc.terminate()
        proc.wait(timeout=20)


async def postgres_url() -> str | None:
    admin = os.environ.get("TOLLWAY_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
    try:
        import asyncpg

        conn = await asyncpg.connect(admin.replace("postgres://", "postgresql://", 1), timeout=3)
    except Exception:
        return None
    name = f"tollway_bench_{secrets.token_hex(3)}"
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    return admin.rsplit("/", 1)[0] + "/" + name


async def drop_postgres(url: str) -> None:
    import asyncpg

    admin = os.environ.get("TOLLWAY_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
    conn = await asyncpg.connect(admin.replace("postgres://", "postgresql://", 1))
    await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="credits-paid calls per path (x402 uses n/2 pre-signed payments)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dbs: list[tuple[str, str]] = []
        if args.db in ("sqlite", "both"):
            dbs.append(("sqlite", f"sqlite:///{tmp}/sqlite-home/tollway.db"))
        if args.db in ("postgres", "both"):
            url = await postgres_url()
            if url:
                dbs.append(("postgres", url))
            else:
                print(json.dumps({"db": "postgres", "skipped": "no PostgreSQL server answered"}))
        for db, url in dbs:
            home = Path(tmp) / f"{db}-home"
            home.mkdir(exist_ok=True)
            row: dict[str, object] = {"db": db, "n": args.n, "concurrency": args.concurrency}
            row.update(await inprocess(db, url, home, args.n, args.concurrency))
            if db == "postgres":
                await drop_postgres(url)
                url = await postgres_url() or url
            else:
                url = f"sqlite:///{tmp}/sqlite-http/tollway.db"
                home = Path(tmp) / "sqlite-http"
                home.mkdir(exist_ok=True)
            row.update(await over_http(db, url, home, args.n, args.concurrency))
            if db == "postgres":
                await drop_postgres(url)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
