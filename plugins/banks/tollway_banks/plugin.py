"""Hook implementations: declare the bank profile tool and its settings.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .fdic import FDIC
from .tool import COMPANY_BANK_PROFILE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(COMPANY_BANK_PROFILE)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in FDIC.settings:
        register(setting)
