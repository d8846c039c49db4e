"""Hook implementations: the console's pages (routes) and its sessions table (docs/console.md).
Nothing runs here at import time beyond building the declarations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, Route, hookimpl

from . import job_pages, pages, plugins_pages, tokens_pages, view_pages, webhooks_pages
from .tables import TABLES

APP = AppConfig(
    app_name="console",
    migrations_folder_path=str(Path(__file__).parent / "migrations"),
    table_classes=list(TABLES),
)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for module in (pages, job_pages, plugins_pages, tokens_pages, webhooks_pages, view_pages):
        for route in module.ROUTES:
            register(route)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)
