"""Parked jobs: a job whose run hands the work to someone outside the service (a seller
who fulfils an order) and whose outcome is written later, from outside any run.

A tool's `run` returns `Parked(message)`: the job stays `processing` with no lease (no
worker claims it again) and shows `message`. `ParkedJobs.finish` or `.fail` then writes
its one outcome exactly as a run would (the receipt re-signed, a failure refunded, the
owner notified, subscribers pushed), inside the caller's transaction when there is one.

`Parked(message, retry_after_s=...)` is the other kind of wait: the run itself must ask
again later (an upstream's answer was lost and only it knows the outcome). The job stays
`processing`, showing `message`, with a lease that runs out after `retry_after_s`; then a
worker claims it as its next attempt and the tool runs again (it finds its own saved
progress, as after a crash). Nothing is refunded or charged meanwhile.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tollway._core.jobs import jobs


@dataclasses.dataclass(frozen=True)
class Parked:
    """A job run's answer meaning "waiting for someone else": `message` is the Job's
    `message` meanwhile (e.g. "waiting for the seller"). With `retry_after_s` the job is run
    again after that many seconds (a new attempt) instead of waiting to be finished from outside."""

    message: str
    retry_after_s: float | None = None


class ParkedJobs:
    """Writes the outcome of a job from outside its runs (a route, a periodic task)."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner  # core.job_runner.JobRunner

    async def _claimed(self, job_id: str) -> jobs.Claimed | None:
        row = await jobs.get(job_id)
        if row is None or row["status"] not in ("pending", "processing"):
            return None
        return jobs.Claimed(row["id"], row["tool"], row["agent_id"], b"", None, row["receipt_id"])

    async def finish(self, job_id: str, result: Any) -> bool:
        """Complete the job with `result` (JSON-able); False when it already has an outcome."""
        claimed = await self._claimed(job_id)
        return claimed is not None and await self.runner.job_completed(claimed, result) == "completed"

    async def fail(self, job_id: str, code: str, message: str) -> bool:
        """Fail the job with a failure code of docs/jobs.md (refunded when its tool refunds
        failed jobs); False when it already has an outcome."""
        claimed = await self._claimed(job_id)
        if claimed is None:
            return False
        tool = self.runner.tools.get(claimed.tool)
        return await self.runner.job_failed(claimed, tool, code, message) == "failed"


__all__ = ["Parked", "ParkedJobs"]
