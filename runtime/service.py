"""Builds a ready-to-start Kernel from settings: the one wiring used by the CLI,
the HTTP app, the tests and the benchmarks."""
from __future__ import annotations

import httpx

from core.kernel import Kernel

from .database import Database
from .plugins import load_entry_point_plugins
from .settings import Settings


def build_kernel(
    settings: Settings,
    *,
    strict_plugins: bool = False,
    plugins: list[tuple[str, object]] | None = None,
    load_installed: bool = True,
    http_transport: httpx.AsyncBaseTransport | None = None,
    worker_only: bool = False,
) -> Kernel:
    db = Database(settings.database_url, asynchronous_commit=worker_only)
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
