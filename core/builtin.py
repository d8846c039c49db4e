"""The kernel's own plugin: the default settlement backends and the kernel's
periodic tasks, declared through the same hooks a third-party plugin uses."""
from __future__ import annotations

from .hookspecs import hookimpl


@hookimpl(trylast=True)
def register_settlement_backends(register):
    from .payments.facilitator import FacilitatorSettlement
    from .payments.settlement import LocalSettlement

    register("local", LocalSettlement)
    register("facilitator", FacilitatorSettlement)


async def _purge_old_jobs(kernel):
    from . import jobs

    await jobs.purge_older_than(jobs.RETENTION_DAYS)


@hookimpl
def register_periodic_tasks(register):
    from .periodic import PeriodicTask

    from .idempotency import PURGE_TASK as purge_idempotency
    from .ratelimits import PURGE_TASK as purge_rate_counters

    # Jobs are retained 30 days after creation (docs/jobs.md).
    register(PeriodicTask(name="purge_old_jobs", interval_s=3600, run=_purge_old_jobs))
    register(purge_rate_counters)
    register(purge_idempotency)
