"""Hook implementations: declare the drug adverse events tool and its settings.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .openfda import OPENFDA
from .tool import PRODUCT_DRUG_ADVERSE_EVENTS


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(PRODUCT_DRUG_ADVERSE_EVENTS)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in OPENFDA.settings:
        register(setting)
