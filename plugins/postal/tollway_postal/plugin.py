"""Hook implementations: the `lob` provider of the `mail` kind, the physical mail tool, the
letter tracking route and the plugin's table (`postal_letters`).

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, Provider, Route, Tool, hookimpl

from .lob import LOB_MAIL
from .send_tool import PHYSICAL_MAIL_SEND
from .tables import TABLES
from .track_route import TRACK_ROUTE

APP = AppConfig(
    app_name="postal", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES)
)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(LOB_MAIL)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(PHYSICAL_MAIL_SEND)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    register(TRACK_ROUTE)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)
