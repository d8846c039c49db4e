"""Hook implementations: the two screening tools, the lists as a watch source, the
lists URL setting, the daily refresh, and loading the lists at start-up.

At start-up the lists persisted under TOLLWAY_HOME are loaded; a `file://`
lists URL is read at once (before the service answers); any other URL is
downloaded once by a background task started here when lists are missing or old,
then daily by the periodic task (whose first run waits a day, so a start never
downloads twice). Stopping the service cancels a download still running.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tollway import DataSource, PeriodicTask, PluginContext, Setting, StateKey, Tool, WatchSource, hookimpl

from . import lists
from .tool import COMPANY_SANCTIONS, PERSON_SANCTIONS, screening_tool
from .watch import SANCTIONS_WATCH

log = logging.getLogger("tollway.sanctions")
DOWNLOADS: StateKey[set[asyncio.Task[None]]] = StateKey("sanctions", "downloads")  # the service's start-up download


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    register(screening_tool(context, person=False))
    register(screening_tool(context, person=True))


@hookimpl
def register_watch_sources(register: Callable[[WatchSource], None]) -> None:
    register(SANCTIONS_WATCH)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in lists.OFAC_EXPORTS.settings:
        register(setting)


async def refresh_task(context: PluginContext) -> None:
    """Daily: re-download the lists older than a day (kept when a download fails)."""
    store = lists.store_of(context)
    url = lists.lists_url_from(context.settings("sanctions"))
    if context.offline and not url.startswith("file://"):
        return  # TOLLWAY_OFFLINE: scheduled downloads are off
    results = await store.refresh(url, http=context.http, force=False)
    for name, error in results.items():
        if error:
            log.warning("sanctions list %s not refreshed: %s", name, error)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    # `startup` makes the attempt at start; the scheduler's first run waits a day
    register(
        PeriodicTask(
            name="sanctions_lists_refresh", interval_s=lists.REFRESH_INTERVAL_S, run=refresh_task, run_at_start=False
        )
    )


@hookimpl
async def startup(context: PluginContext) -> None:
    store = lists.store_of(context)
    store.load_persisted()
    url = lists.lists_url_from(context.settings("sanctions"))
    if url.startswith("file://"):
        if store.out_of_date() or store.persisted_newer() or _older_than_refresh(store):
            _load_local_now(store, url)
        return
    if context.offline:  # no background download (TOLLWAY_OFFLINE)
        return
    if store.out_of_date() or _older_than_refresh(store):
        task = asyncio.get_running_loop().create_task(refresh_task(context), name="sanctions_lists_download")
        tasks = context.state.setdefault(DOWNLOADS, set)
        tasks.add(task)
        task.add_done_callback(_download_done)
        task.add_done_callback(tasks.discard)


def _download_done(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("sanctions lists not downloaded: %s", task.exception())


@hookimpl
async def shutdown(context: PluginContext) -> None:
    """A download still running must not outlive the service's HTTP client."""
    for task in context.state.pop(DOWNLOADS) or ():
        task.cancel()


def _older_than_refresh(store: lists.ListStore) -> bool:
    import time

    now = time.time()
    return any(
        spec.key not in store.lists or now - store.lists[spec.key].loaded_at > lists.REFRESH_AFTER_S
        for spec in lists.LISTS
    )


def _load_local_now(store: lists.ListStore, url: str) -> None:
    """A local folder is read synchronously so the first call finds the lists."""
    for name, error in store.load_local(url).items():
        if error:
            log.warning("sanctions list %s not loaded from %s: %s", name, url, error)


async def refresh_source(context: PluginContext, progress: Callable[[int, int | None, str], None]) -> str:
    """`tollway data refresh sanctions`: download every list now (kept when a download fails)."""
    results = await lists.refresh(
        lists.store_of(context),
        context.settings("sanctions"),
        progress=lambda file, done, total: progress(done, total, file),
        http=context.http,
    )
    failed = {name: error for name, error in results.items() if error}
    if failed:
        url = lists.lists_url_from(context.settings("sanctions"))
        reasons = "; ".join(f"{name}: {error}" for name, error in failed.items())
        raise RuntimeError(f"could not load from {url} (TOLLWAY_SANCTIONS_LISTS_URL): {reasons}")
    return f"loaded {', '.join(sorted(results))} into {context.home}/sanctions"


def health(context: PluginContext) -> str | None:
    """Why the screening tools cannot answer now (a list out of date), or None."""
    stale = lists.store_of(context).out_of_date()
    return f"out of date (never loaded or older than 72 hours): {', '.join(stale)}" if stale else None


@hookimpl
def register_data_sources(register: Callable[[DataSource], None]) -> None:
    register(
        DataSource(
            name="sanctions",
            description="OFAC SDN and consolidated (non-SDN) lists",
            refresh=refresh_source,
            tools=(COMPANY_SANCTIONS, PERSON_SANCTIONS),
            health=health,
        )
    )
