"""Hook implementations: declare the solicitations tool, its settings and its watch source.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, WatchSource, hookimpl

from .sam import SAM
from .tool import GOVERNMENT_SOLICITATIONS
from .watch import SOLICITATIONS_WATCH


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(GOVERNMENT_SOLICITATIONS)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SAM.settings:
        register(setting)


@hookimpl
def register_watch_sources(register: Callable[[WatchSource], None]) -> None:
    register(SOLICITATIONS_WATCH)
