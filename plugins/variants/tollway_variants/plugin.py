"""Hook implementations: declare the variant clinical significance tool and its setting."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .clinvar import EUTILS
from .tool import VARIANT_CLINICAL_SIGNIFICANCE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(VARIANT_CLINICAL_SIGNIFICANCE)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in EUTILS.settings:
        register(setting)
