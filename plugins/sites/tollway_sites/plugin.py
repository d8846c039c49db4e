"""Hook implementations: the website build and update tools, the route serving sites, the
settings, the tables, the `domains` provider kind and the domain expiry check
(docs/website.md). Nothing runs here at import time beyond building the declarations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, PeriodicTask, PluginContext, Provider, Route, Setting, Tool, hookimpl

from . import domains, expiry, serve, tool
from .settings import SETTINGS
from .tables import TABLES

APP = AppConfig(
    app_name="website",
    migrations_folder_path=str(Path(__file__).parent / "migrations"),
    table_classes=list(TABLES),
)


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    register(tool.build_tool(context))
    register(tool.update_tool(context))


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    for provider in domains.PROVIDERS:
        register(provider)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in serve.ROUTES:
        register(route)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    for task in expiry.TASKS:
        register(task)
