"""Web search overhead: what the paid `web_search` call adds above its provider's own latency.

A child process serves SearXNG's JSON API on 127.0.0.1 (the documented answer in
plugins/web/tests/fixtures/search), answering each query after a fixed delay. The bench
times `--n` direct GETs of that server (the provider's latency, through the same kind of
httpx client), then `--n` credits-paid searches through the ASGI app in this process
(SQLite), one at a time. Prints one JSON line:
{search_p50_ms, provider_p50_ms, overhead_p50_ms, goal_ms: 5}.

Run: `.venv/bin/python bench/search.py [--n 300] [--latency-ms 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIXTURE = ROOT / "plugins" / "web" / "tests" / "fixtures" / "search" / "searxng_search.json"
OPERATOR = "bench-operator-token"
PATH = "/v1/tools/search"

# The stand-in: a minimal HTTP/1.1 server with keep-alive, answering every request with the
# fixture after `delay` seconds (asyncio, so concurrent requests do not queue).
SERVER = """
import asyncio, sys
body = open(sys.argv[1], "rb").read()
delay = float(sys.argv[3])
head = b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: " + str(len(body)).encode() + b"\\r\\n\\r\\n"
async def serve(reader, writer):
    try:
        while True:
            request = await reader.readuntil(b"\\r\\n\\r\\n")
            await asyncio.sleep(delay)
            writer.write(head + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[2]))
    print("ready", flush=True)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def timed(n: int, one) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await one(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def provider_latency(base: str, n: int) -> list[float]:
    async with httpx.AsyncClient(timeout=15.0) as http:

        async def one(i: int) -> None:
            resp = await http.get(f"{base}/search", params={"q": f"ferry {i}", "format": "json"})
            resp.json()

        await timed(20, one)  # warm up
        return await timed(n, one)


async def search_latency(base: str, home: Path, n: int) -> list[float]:
    from tollway._runtime.plugins import load_entry_point_plugins
    from tollway._runtime.service import build_kernel, http_app
    from tollway._runtime.settings import load_settings

    env = {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": f"sqlite:///{home / 'tollway.db'}",
        "TOLLWAY_NETWORK": "local",
        "TOLLWAY_OFFLINE": "1",
        "TOLLWAY_OPERATOR_TOKEN": OPERATOR,
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x0b" * 32).decode(),
        "TOLLWAY_RATE_LIMIT_PAID": "10000000/60",
        "TOLLWAY_RATE_LIMIT_FREE_READ": "10000000/60",
        "TOLLWAY_SEARCH_PROVIDER": "searxng",
        "TOLLWAY_SEARCH_SEARXNG_URL": base,
    }
    kernel = build_kernel(load_settings(env), load_installed=False)
    load_entry_point_plugins(kernel, strict=True, only={"tollway_web"})
    await kernel.start()
    try:
        app = http_app(kernel, manage_kernel=False)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as client:
            op = {"Authorization": f"Bearer {OPERATOR}"}
            agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=op)).json()
            await client.post(
                "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "100"}, headers=op
            )
            token = (
                await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=op)
            ).json()["token"]
            auth = {"Authorization": f"Bearer {token}"}

            async def one(i: int) -> None:
                resp = await client.post(PATH, json={"query": f"ferry {i}", "max_results": 5}, headers=auth)
                if resp.status_code != 200:
                    raise RuntimeError(resp.text)

            await timed(20, one)  # warm up
            return await timed(n, one)
    finally:
        await kernel.stop()


async def main(n: int, latency_ms: float) -> dict[str, float]:
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(FIXTURE), str(port), str(latency_ms / 1000)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        base = f"http://127.0.0.1:{port}"
        provider = await provider_latency(base, n)
        with tempfile.TemporaryDirectory() as home:
            search = await search_latency(base, Path(home), n)
    finally:
        child.terminate()
        child.wait(5)
    search_p50, provider_p50 = statistics.median(search), statistics.median(provider)
    return {
        "search_p50_ms": round(search_p50, 3),
        "provider_p50_ms": round(provider_p50, 3),
        "overhead_p50_ms": round(search_p50 - provider_p50, 3),
        "goal_ms": 5,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.n, args.latency_ms))))
