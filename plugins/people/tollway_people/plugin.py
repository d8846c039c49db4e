"""Hook implementations: the people research tool, the operator's opt-out routes and their
table (docs/people.md). Nothing runs here at import time beyond building the declarations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, Route, Tool, hookimpl

from .optouts import ROUTES
from .tables import TABLES
from .tool import PEOPLE_RESEARCH

APP = AppConfig(
    app_name="people",
    migrations_folder_path=str(Path(__file__).parent / "migrations"),
    table_classes=list(TABLES),
)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(PEOPLE_RESEARCH)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in ROUTES:
        register(route)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)
