"""The composition root: the one place that assembles database, kernel, job workers,
scheduler and the two fronts, for `tollway serve`, `tollway worker`, `tollway mcp`,
the other commands, the test fixtures and the benchmarks."""

from __future__ import annotations

from typing import Any

import httpx

from tollway._core.kernel import Kernel
from tollway._runtime.database import Database
from tollway._runtime.plugins import load_entry_point_plugins
from tollway._runtime.scheduler import Scheduler
from tollway._runtime.settings import Settings
from tollway._runtime.wake_loop import WakeLoop, delivery_loop, webhook_loop
from tollway._runtime.worker import Worker


def build_kernel(
    settings: Settings,
    *,
    strict_plugins: bool = False,
    plugins: list[tuple[str, object]] | None = None,
    load_installed: bool = True,
    http_transport: httpx.AsyncBaseTransport | None = None,
    worker_only: bool = False,
) -> Kernel:
    """A ready-to-start kernel over the settings' database, with the installed plugins."""
    db = Database(
        settings.database_url,
        asynchronous_commit=worker_only,
        dead_session_s=settings.db_dead_session_s,
        pool_max=settings.db_pool_max,
    )
    kernel = Kernel(
        settings.kernel_config(strict_plugins=strict_plugins),
        db,
        plugins=plugins or [],
        http_transport=http_transport,
        events=db.event_bus(),
    )
    if load_installed:
        load_entry_point_plugins(kernel, strict=strict_plugins)
    return kernel


class Background:
    """What runs beside a front in one process: `workers` job workers, with them
    the webhook loop (webhooks are sent wherever jobs run) and, with `scheduler`,
    the periodic tasks. Start after the kernel, stop before it."""

    def __init__(self, kernel: Kernel, *, workers: int = 0, scheduler: bool = False, **worker_options: Any) -> None:
        self.kernel = kernel
        self.workers = [Worker(kernel, **worker_options) for _ in range(workers)]
        self.scheduler = scheduler
        self.webhook_loop: WakeLoop | None = None
        self._running: list[Any] = []

    async def start(self) -> None:
        for worker in self.workers:
            worker.start()
            self._running.append(worker)
        if self.workers:  # where jobs run, watch changes are delivered and webhooks sent too
            self.webhook_loop = webhook_loop(self.kernel.webhooks)
            for loop in (delivery_loop(self.kernel), self.webhook_loop):
                loop.start()
                self._running.append(loop)
        if self.scheduler:
            sched = Scheduler.for_kernel(self.kernel)
            sched.start()
            self._running.append(sched)

    async def stop(self) -> None:
        for item in reversed(self._running):
            await item.stop()
        self._running.clear()


def http_app(
    kernel: Kernel,
    *,
    manage_kernel: bool = True,
    workers: int = 0,
    scheduler: bool = False,
    debug: bool = False,
    mcp_allowed_hosts: list[str] | None = None,
) -> Any:
    """The HTTP front with the MCP front mounted beside it (Streamable HTTP at /mcp, its
    session manager run in the app's lifespan) for `kernel`.

    The kernel's registries are collected now (the routes need them). With
    `manage_kernel` the app starts and stops the kernel with its lifespan; `workers`
    > 0 runs that many in-process job workers (the SQLite default, where one process
    does everything) and `scheduler` the periodic tasks. `mcp_allowed_hosts` (default
    TOLLWAY_MCP_ALLOWED_HOSTS, else loopback only) is MCP's DNS-rebinding allow-list of
    Host values.
    """
    from tollway._http_server import create_app
    from tollway._mcp_server.http import streamable_http

    kernel.collect()
    background = Background(kernel, workers=workers, scheduler=scheduler)
    mcp_endpoint, mcp_lifespan = streamable_http(kernel, allowed_hosts=mcp_allowed_hosts)
    return create_app(
        kernel,
        on_startup=([kernel.start] if manage_kernel else []) + [background.start],
        on_shutdown=[background.stop] + ([kernel.stop] if manage_kernel else []),
        debug=debug,
        mounts=[mcp_endpoint],
        lifespan=[mcp_lifespan],
    )


SERVE_JOB_WORKERS_ENV = "TOLLWAY_SERVE_JOB_WORKERS"  # `tollway serve --workers`, for each of its processes


def serve_app(kernel: Kernel | None = None) -> Any:
    """One process of `tollway serve --processes N` (N > 1): uvicorn imports this by
    name and calls it in every process it starts, each building its own kernel from
    the environment's settings (or serving `kernel`) with the scheduler and the job
    workers the command was given."""
    import os

    from tollway._runtime.settings import load_settings

    if kernel is None:
        kernel = build_kernel(load_settings())
    return http_app(kernel, workers=int(os.environ.get(SERVE_JOB_WORKERS_ENV, "1")), scheduler=True)


def mcp_server(kernel: Kernel, *, identity: Any = None, token: str | None = None) -> Any:
    """The MCP front for `kernel` (in memory: `mcp.Client(mcp_server(kernel).server)`); with
    `token`, every call is that access token's (as `tollway mcp` holding it)."""
    from tollway._mcp_server import BearerIdentity, build_server

    return build_server(kernel, identity=BearerIdentity(token) if token is not None else identity)


async def run_worker(kernel: Kernel, *, concurrency: int, lease_s: float, stop: Any, ready: Any = None) -> None:
    """`tollway worker`: start the kernel, a worker and the scheduler; run until `stop` is set."""
    await kernel.start()
    background = Background(kernel, workers=1, scheduler=True, concurrency=concurrency, lease_s=lease_s)
    await background.start()
    try:
        if ready is not None:
            ready(background.workers[0])
        await stop.wait()
    finally:
        await background.stop()
        await kernel.stop()


async def run_mcp_stdio(
    kernel: Kernel, *, agent_key: str | None, workers: int = 0, tools: frozenset[str] | None = None
) -> None:
    """`tollway mcp`: start the kernel (and `workers` job workers, so job tools finish
    even when no `tollway serve` runs beside it), serve MCP on stdin/stdout (only `tools`,
    when given) until the client closes it, then stop."""
    from tollway._mcp_server.server import identity_from_key
    from tollway._mcp_server.stdio import serve_stdio

    await kernel.start()
    background = Background(kernel, workers=workers)
    try:
        identity = identity_from_key(agent_key, kernel.network.chain_id)
        await background.start()
        await serve_stdio(kernel, identity=identity, tools=tools)
    finally:
        await background.stop()
        await kernel.stop()
