"""Periodic task declaration (run by the runtime's scheduler)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from tollway._core.plugin_api.context import PluginContext


@dataclasses.dataclass(frozen=True)
class PeriodicTask:
    name: str
    interval_s: float
    run: Callable[[PluginContext], Awaitable[None]]  # awaited with the service's `PluginContext`
    # False: the first run waits one interval (for work the plugin's `startup` already
    # does once, so a start never does it twice)
    run_at_start: bool = True
