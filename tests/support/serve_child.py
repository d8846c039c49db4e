"""`tollway serve` as a real child process on a free 127.0.0.1 port, for the tests
that must crash, kill or restart the server itself (CLI tests use serve_process.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from pathlib import Path

import httpx

from tollway.testing import settings_for

REPO = Path(__file__).resolve().parents[2]
TOLLWAY = str(Path(sys.executable).parent / "tollway")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_env(tmp_path: Path, db_kind: str = "sqlite", **env: str) -> dict[str, str]:
    """The environment of a `tollway serve` on the test's TOLLWAY_HOME (TOLLWAY_OFFLINE=1)."""
    settings = settings_for(tmp_path, db_kind)
    full = {**os.environ, **{k: v for k, v in settings.env.items() if k.startswith("TOLLWAY_")}}
    full.update(env)
    return full


class ServeProcess:
    """One `tollway serve --port <port>`; its output goes to a log file (read on failure)."""

    def __init__(self, env: dict[str, str], port: int, log: Path, *args: str, cwd: Path = REPO) -> None:
        self.env, self.port, self.log, self.args, self.cwd = env, port, log, args, cwd
        self.proc: asyncio.subprocess.Process | None = None
        self.url = f"http://127.0.0.1:{port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, timeout: float = 120.0) -> None:
        with open(self.log, "ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                TOLLWAY,
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *self.args,
                env=self.env,
                cwd=str(self.cwd),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with httpx.AsyncClient(base_url=self.url, timeout=2.0) as client:
            while loop.time() < deadline:
                if self.proc.returncode is not None:
                    raise AssertionError(f"tollway serve exited with {self.proc.returncode}:\n{self.output()}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/healthz")).status_code == 200:
                        return
                await asyncio.sleep(0.1)
        raise AssertionError(f"tollway serve did not answer within {timeout:g} s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), timeout=15)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


@contextlib.asynccontextmanager
async def running_serve(env: dict[str, str], port: int, log: Path, *args: str):
    server = ServeProcess(env, port, log, *args)
    try:
        await server.start()
        yield server
    finally:
        await server.stop()
