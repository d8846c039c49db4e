"""Hook implementations: declare the vehicle tools (recalls, complaints, VIN decoding) and their settings.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Setting, Tool, hookimpl

from .nhtsa import NHTSA
from .tool import VEHICLE_RECALLS
from .tool_complaints import VEHICLE_COMPLAINTS
from .tool_vin import VEHICLE_IDENTIFICATION
from .vin import VPIC


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(VEHICLE_RECALLS)
    register(VEHICLE_COMPLAINTS)
    register(VEHICLE_IDENTIFICATION)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in (*NHTSA.settings, *VPIC.settings):
        register(setting)
