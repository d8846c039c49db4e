"""Downloadable data a plugin keeps under TOLLWAY_HOME (e.g. the OFAC lists),
declared through `register_data_sources` and refreshed by `tollway data refresh
[SOURCE]` (and by the plugin's own periodic task)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from tollway._core.plugin_api.context import PluginContext

# progress(done, total, what): total is None when unknown
Progress = Callable[[int, int | None, str], None]


@dataclasses.dataclass(frozen=True)
class DataSource:
    name: str  # what `tollway data refresh NAME` names, e.g. "sanctions"
    description: str
    refresh: Callable[[PluginContext, Progress], Awaitable[str]]  # (context, progress) -> one-line summary
    # The tools that answer from this data, and `health(context)`: None while they can
    # answer, else why not (e.g. the lists are out of date). Cheap, no I/O: `/healthz`
    # calls it on every request and reports the service `degraded` while it names a problem.
    tools: tuple[str, ...] = ()
    health: Callable[[PluginContext], str | None] | None = None
