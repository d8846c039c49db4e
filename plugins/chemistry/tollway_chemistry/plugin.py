"""Hook implementations: declare the compound resolve tool and its setting."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .pubchem import PUBCHEM
from .tool import COMPOUND_RESOLVE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(COMPOUND_RESOLVE)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in PUBCHEM.settings:
        register(setting)
