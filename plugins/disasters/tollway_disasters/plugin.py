"""Hook implementations: declare the `place_disasters` tool and its setting.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .openfema import OPENFEMA
from .tool import place_disasters


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(place_disasters)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in OPENFEMA.settings:
        register(setting)
