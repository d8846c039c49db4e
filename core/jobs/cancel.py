"""The operator's cancel of a job (`Platform.cancel_job`, the console's job page).

A job not finished yet (pending, waiting for its payment, processing, parked) fails with the
code `cancelled` exactly as a failed run would (core/jobs/parked.py): the fenced write
`status IN ('pending', 'processing')`, so it ends once whoever writes first; its receipt is
re-signed and refunded by the failed-job rule (`Tool.refund_failed_jobs`; a pending x402
charge becomes `refund_due`); its owner gets the `job_failed` notification; push subscribers
hear `failed`. A worker still running it cannot write its outcome afterwards (its writes are
fenced on `status = 'processing'`) and stops the run at its next heartbeat
(core/jobs/job_runner.py). A finished job is left as it is.
"""

from __future__ import annotations

from typing import Literal

from tollway._core.jobs import jobs
from tollway._core.jobs.parked import ParkedJobs
from tollway._core.jobs.tables import Job

REASON_MAX = 200
Cancelled = Literal["cancelled", "finished", "not_found"]


def message(reason: str | None) -> str:
    """The failure message the agent reads (the reason is the operator's, shown to the agent)."""
    reason = " ".join((reason or "").split())[:REASON_MAX].rstrip(".")
    return f"Cancelled by the operator: {reason}." if reason else "Cancelled by the operator."


async def cancel(parked: ParkedJobs, job_id: str, reason: str | None) -> Cancelled:
    """`cancelled` when this call ended the job, `finished` when it already had an outcome
    (an earlier cancel included: nothing more is refunded), `not_found` when there is no such job."""
    if not await Job.exists().where(Job.id == job_id):
        return "not_found"
    return "cancelled" if await parked.fail(job_id, jobs.CANCELLED, message(reason)) else "finished"
