"""The kernel's own periodic tasks: purging old jobs, rate counters, idempotency records
and the records of paid quotes that expired, and reconciling money left in an
intermediate state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tollway._core.jobs import jobs
from tollway._core.payments import quotes
from tollway._core.plugin_api.periodic import PeriodicTask


def housekeeping_tasks(
    *, rate_limiter: Any, idempotency: Any, reconcile: Callable[[], Awaitable[None]], reconcile_interval_s: float
) -> list[PeriodicTask]:
    """The tasks, each closing over what it cleans (plugins' tasks get the `PluginContext` instead)."""

    async def reconcile_task(_services: Any) -> None:
        await reconcile()

    async def purge_jobs(_services: Any) -> None:
        await jobs.purge_older_than(jobs.RETENTION_DAYS)  # jobs are kept 30 days (docs/jobs.md)

    async def purge_rate_counters(_services: Any) -> None:
        await rate_limiter.purge_expired()

    async def purge_idempotency(_services: Any) -> None:
        await idempotency.purge_expired()

    async def purge_paid_quotes(_services: Any) -> None:
        await quotes.purge_expired()

    return [
        PeriodicTask(name="purge_old_jobs", interval_s=3600, run=purge_jobs),
        PeriodicTask(name="rate_limit_purge", interval_s=300.0, run=purge_rate_counters),
        PeriodicTask(name="idempotency_purge", interval_s=3600.0, run=purge_idempotency),
        PeriodicTask(name="paid_quote_purge", interval_s=3600.0, run=purge_paid_quotes),
        PeriodicTask(name="reconcile", interval_s=reconcile_interval_s, run=reconcile_task),
    ]
