"""The almanac plugin's hooks: the entry point `tollway_almanac = "tollway_almanac.plugin"`."""

from __future__ import annotations

import tollway

from .day_length import almanac_day_length
from .holidays import HOLIDAYS, NAGER


@tollway.hookimpl
def register_tools(register):
    register(almanac_day_length)
    register(HOLIDAYS)


@tollway.hookimpl
def register_settings(register):
    for setting in NAGER.settings:  # almanac's nager_api_url: TOLLWAY_ALMANAC_NAGER_API_URL
        register(setting)


async def note_the_hour(context: tollway.PluginContext) -> None:
    """A periodic task: it gets the same `PluginContext` as the lifecycle hooks."""
    (context.home / "almanac" / "last_tick").write_text(tollway.iso(tollway.now_ms()))


@tollway.hookimpl
def register_periodic_tasks(register):
    register(tollway.PeriodicTask(name="almanac_tick", interval_s=3600, run=note_the_hour))


@tollway.hookimpl
async def startup(context: tollway.PluginContext) -> None:
    # A plugin keeps its files in a folder of its own under TOLLWAY_HOME.
    (context.home / "almanac").mkdir(parents=True, exist_ok=True)
