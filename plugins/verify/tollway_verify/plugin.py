"""Hook implementations: declare the email verification tool and its settings.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .settings import SETTINGS
from .tool import EMAIL_VERIFICATION


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(EMAIL_VERIFICATION)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)
