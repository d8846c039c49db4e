"""The HTTP side the paid-call bench shares: an app factory served by uvicorn in a child
process with `tollway serve`'s server arguments, the aiohttp client and the load driver."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from common import cpu_seconds, percentile

ROOT = Path(__file__).resolve().parents[1]

# Every server of the bench (the service, the bare framework, the SDK) runs with these
# arguments: `tollway serve`'s (runtime/cli.py), `workers` being the process count. The
# app comes from a factory named by import string, as uvicorn needs it for several
# processes; with one, uvicorn serves it in the child process itself.
CHILD = """
import sys, uvicorn
sys.path[:0] = [{root!r}, {bench!r}]
if {processes} == 1:
    uvicorn.run({target!r}, factory=True, host="127.0.0.1", port={port}, log_level="info", access_log=False)
else:  # as `tollway serve --processes N` runs them
    from runtime.processes import serve_processes
    serve_processes({target!r}, host="127.0.0.1", port={port}, processes={processes}, paths=[{root!r}, {bench!r}])
"""


def machine_idle() -> tuple[int, int]:
    """(idle, total) CPU ticks of the whole machine so far, all cores (Linux; zeros elsewhere)."""
    try:
        ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return 0, 0
    return ticks[3] + ticks[4], sum(ticks)  # idle + iowait


def idle_since(start: tuple[int, int]) -> float:
    """The share of the machine's CPU (all cores) left idle since `machine_idle()` gave `start`."""
    now = machine_idle()
    return (now[0] - start[0]) / max(1, now[1] - start[1])


def server_cpu_seconds(pid: int) -> list[float]:
    """CPU seconds so far of each serving process of the server child `pid`: the child
    itself, or the processes uvicorn started under it to serve (Linux /proc; empty
    elsewhere). Shows how busy the servers were and how the OS spread the load."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        workers = [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
        return [cpu_seconds(w) for w in workers] if workers else [cpu_seconds(pid)]
    except OSError:
        return []


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
        self.server_pid = 0
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections))

    async def request(
        self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None
    ) -> _Answer:
        async with self.session.request(method, self.base_url + path, json=json, headers=headers) as resp:
            return _Answer(resp.status, resp.headers, await resp.read())

    async def post(self, path: str, *, json: Any = None, headers: dict[str, str] | None = None) -> _Answer:
        return await self.request("POST", path, json=json, headers=headers)

    async def get(self, path: str, *, headers: dict[str, str] | None = None) -> _Answer:
        return await self.request("GET", path, headers=headers)

    async def close(self) -> None:
        await self.session.close()


@contextlib.asynccontextmanager
async def served(
    target: str, *, env: dict[str, str], concurrency: int, processes: int = 1, ready_path: str = "/"
) -> AsyncIterator[FastClient]:
    """Serve the factory `target` ("module:function") in a child process; yields a client
    (connection limit twice `concurrency`) once the server answers `ready_path` at all."""
    port = free_port()
    code = CHILD.format(root=str(ROOT), bench=str(ROOT / "bench"), target=target, port=port, processes=processes)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", code], env={**os.environ, **env}, cwd=str(ROOT), stdout=log, stderr=log
        )
        client = FastClient(f"http://127.0.0.1:{port}", concurrency * 2)
        client.server_pid = proc.pid
        try:
            for _ in range(600):
                if proc.poll() is not None:
                    break
                try:
                    await client.get(ready_path)
                    break
                except Exception:  # not listening yet
                    await asyncio.sleep(0.1)
            else:  # a minute without an answer
                proc.kill()
                proc.wait()
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{target} did not start:\n{log.read().decode(errors='replace')[-3000:]}")
            yield client
        finally:
            await client.close()
            proc.terminate()
            proc.wait(timeout=30)


async def drive(n: int, concurrency: int, one: Callable[[int], Awaitable[None]]) -> dict[str, float]:
    """Run `one(i)` for i in 0..n-1 with `concurrency` calls in flight; returns rps and p50/p99 (ms)."""
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


def ramp_calls(concurrency: int) -> int:
    return concurrency * (concurrency + 1) // 2


async def ramp_up(concurrency: int, one: Callable[[int], Awaitable[None]]) -> None:
    """Warm a server up while opening the client's connections one at a time (k calls in
    flight for k = 1..concurrency, `ramp_calls` in all), as traffic arriving over time
    does: with several server processes on one port, a burst of new connections goes
    whole to whichever process wakes first, while one at a time each goes to a process
    free to accept it then. The split stays the OS's (a process waiting on the database
    accepts as readily as an idle one); the bench shows it per process."""
    done = 0
    for k in range(1, concurrency + 1):
        await drive(k, k, lambda i: one(done + i))
        done += k
