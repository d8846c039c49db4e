"""Hook implementations: declare the web read tool and its settings.

Nothing runs here at import time beyond building the declarations.
"""
from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .settings import SETTINGS
from .tool import WEB_READ


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(WEB_READ)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)
