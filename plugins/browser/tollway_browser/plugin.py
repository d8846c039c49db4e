"""Hook implementations: the browser task tool, the profile and artifact routes, the
settings, the tables, the artifacts' 30-day purge and, at start, the sweep of temporary
browser profiles dead tasks left (docs/browser.md).

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, PeriodicTask, PluginContext, Route, Setting, Tool, hookimpl

from . import artifacts, profiles, session
from .settings import SETTINGS
from .tables import TABLES
from .tool import browser_task_tool

APP = AppConfig(
    app_name="browser",
    migrations_folder_path=str(Path(__file__).parent / "migrations"),
    table_classes=list(TABLES),
)


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    register(browser_task_tool(context))


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*profiles.ROUTES, *artifacts.ROUTES):
        register(route)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    register(artifacts.PURGE)


@hookimpl
async def startup(context: PluginContext) -> None:
    await asyncio.to_thread(session.sweep_profiles)
