"""Hook implementations: declare this family's tools and settings.

Hooks only declare; the declared objects carry the behaviour. Nothing here does
I/O or reads the environment at import time.
"""
from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .registry import PACKAGE, PYPI
from .temperature import {{family}}_temperature
from .tool import STOP_WORDS_SETTING, TEXT_STATS


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(TEXT_STATS)
    register(PACKAGE)
    register({{family}}_temperature)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    register(STOP_WORDS_SETTING)
    for setting in PYPI.settings:
        register(setting)
