"""`tollway serve` as a real subprocess for CLI tests: started on a free port,
ready when /healthz answers, stopped with SIGTERM; its stderr is kept to read."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

TOLLWAY = str(Path(sys.executable).parent / "tollway")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cli_env(**env: str) -> dict[str, str]:
    """The test process's environment without any TOLLWAY_* setting, plus `env`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOLLWAY_") or k == "TOLLWAY_DOTENV"}
    base.update(env)
    return base


@dataclasses.dataclass
class Served:
    url: str
    port: int
    proc: asyncio.subprocess.Process
    stderr: list[str]


@contextlib.asynccontextmanager
async def tollway_serve(
    env: dict[str, str], *, cwd: Path, timeout_s: float = 60.0, args: tuple[str, ...] = ()
) -> AsyncIterator[Served]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        TOLLWAY,
        "serve",
        "--port",
        str(port),
        "--workers",
        "0",
        *args,
        env=cli_env(**env),
        cwd=str(cwd),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    lines: list[str] = []

    async def read_stderr() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            lines.append(raw.decode(errors="replace"))

    reader = asyncio.create_task(read_stderr())
    url = f"http://127.0.0.1:{port}"
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        async with httpx.AsyncClient() as http:
            while True:
                if proc.returncode is not None:
                    await reader
                    raise RuntimeError(f"tollway serve exited {proc.returncode}: {''.join(lines)}")
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(f"{url}/healthz", timeout=2)).status_code == 200:
                        break
                if loop.time() > deadline:
                    raise RuntimeError(f"tollway serve did not answer within {timeout_s} s: {''.join(lines)}")
                await asyncio.sleep(0.1)
        yield Served(url, port, proc, lines)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await reader


async def run_cli(*args: str, env: dict[str, str], cwd: Path, timeout_s: float = 120.0) -> tuple[int, str, str]:
    """`tollway ARGS…` as a subprocess: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        TOLLWAY, *args, env=cli_env(**env), cwd=str(cwd), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
