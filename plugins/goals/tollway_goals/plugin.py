"""Hook implementations: the compute tool, the goal routes, the goals tables and settings,
and the session runner the workers run."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, PeriodicTask, Route, Services, Setting, Tool, hookimpl

from . import inbound
from .compute_tool import COMPUTE
from .connections import CONNECTION_ROUTES
from .platform_ref import set_platform
from .approval_routes import ROUTES as APPROVAL_ROUTES
from .routes import ROUTES
from .runner import _runners, asks_task, ending_task, session_task
from .settings import SETTINGS
from .tables import TABLES

APP = AppConfig(app_name="goals", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES))


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(COMPUTE)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*ROUTES, *APPROVAL_ROUTES, *CONNECTION_ROUTES):
        register(route)


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
def startup(services: Services) -> None:
    set_platform(services.platform)


@hookimpl
def shutdown(services: Services) -> None:
    runner = _runners.pop(services.instance, None)
    if runner is not None:
        for task in list(runner.tasks):
            task.cancel()
