"""Serving an ASGI app for real on 127.0.0.1 inside a test's event loop (so the
app shares the loop, and the asyncpg pool, of the kernel the test started)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from tollway._runtime.proxies import uvicorn_proxy_options


class _InLoopServer(uvicorn.Server):
    """uvicorn inside a test: leaves the test runner's signal handlers alone."""

    def capture_signals(self) -> contextlib.AbstractContextManager[None]:  # type: ignore[override]
        return contextlib.nullcontext()


@contextlib.asynccontextmanager
async def serve_app(app: Any, *, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free port of `host` in the running loop; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        **uvicorn_proxy_options(()),  # as a service without TOLLWAY_TRUSTED_PROXIES
    )
    server = _InLoopServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        for _ in range(2000):  # start-up takes milliseconds; bounded all the same
            if server.started or task.done():
                break
            await asyncio.sleep(0.005)
        if not server.started:
            if task.done():
                task.result()  # re-raises why it could not start
            raise RuntimeError("uvicorn did not start")
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
