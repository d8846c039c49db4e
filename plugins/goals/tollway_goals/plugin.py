"""Hook implementations: the compute tool, the goal routes, the goals tables and settings,
the session runner the workers run, and the operator page (the console's Goals)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, OperatorPage, PeriodicTask, PluginContext, Route, Setting, Tool, hookimpl

from . import inbound
from .approval_routes import ROUTES as APPROVAL_ROUTES
from .compute_tool import compute_tool
from .connections import CONNECTION_ROUTES
from .operator_page import OPERATOR_PAGE
from .routes import ROUTES
from .runner import asks_task, ending_task, session_task, stop_runner
from .settings import SETTINGS
from .tables import TABLES

APP = AppConfig(
    app_name="goals", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES)
)


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    register(compute_tool(context))


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*ROUTES, *APPROVAL_ROUTES, *CONNECTION_ROUTES):
        register(route)


@hookimpl
def register_operator_pages(register: Callable[[OperatorPage], None]) -> None:
    register(OPERATOR_PAGE)


@hookimpl
def register_inbound_handlers(register: Callable[..., None]) -> None:
    register(inbound.handle)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    register(session_task())
    register(asks_task())
    register(ending_task())


@hookimpl
async def shutdown(context: PluginContext) -> None:
    await stop_runner(context)
