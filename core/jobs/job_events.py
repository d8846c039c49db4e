"""A job's events (`tw_job_events`): one row per step of its life, written by core/jobs/jobs.py
in the transaction of the state change it records, read oldest first for the console's job
page, and deleted with the job.

Kinds: `accepted` (text: what it waits for, if anything), `released` (its payment settled),
`started` (attempt 1 claimed; text: the worker), `retried` (a later attempt claimed: the one
before lost its lease, or its retry wait ended; text: the worker), `progress` (the run's
message), `parked` (the run handed the job on or will ask again; text: its message),
`completed`, `failed` (text: the code and message), `cancelled` (by the operator; text: the
reason). A heartbeat or a poll writes nothing. A chatty run cannot grow the table without
bound: a job keeps its latest `PROGRESS_KEPT` progress rows, older ones are deleted as new
ones come.
"""

from __future__ import annotations

from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.json_values import JSONObject
from tollway._core.jobs.tables import Job, JobEvent
from tollway._core.storage import sql

PROGRESS_KEPT = 100
TEXT_MAX = 500

# Raw, like the job's own statements: on the paid call's and the worker's path (bench/jobs.py).
INSERT = sql.Statement("INSERT INTO tw_job_events (job_id, at_ms, kind, attempt, text) VALUES ({}, {}, {}, {}, {})")
# The progress rows of a job older than its latest PROGRESS_KEPT (nothing while it has fewer):
# the OFFSET is PROGRESS_KEPT - 1 (a test holds them together).
TRIM = sql.Statement(
    "DELETE FROM tw_job_events WHERE job_id = {} AND kind = 'progress' AND seq < (SELECT seq FROM tw_job_events "
    "WHERE job_id = {} AND kind = 'progress' ORDER BY seq DESC LIMIT 1 OFFSET 99)"
)
# The claim's event on PostgreSQL is written by the claim statement itself (core/jobs/jobs.py, CLAIM_SKIP_LOCKED).


def claimed_kind(attempt: int) -> str:
    return "started" if attempt == 1 else "retried"


async def record(job_id: str, kind: str, *, attempt: int | None = None, text: str | None = None) -> None:
    """One event, in the caller's transaction."""
    await INSERT.execute(job_id, now_ms(), kind, attempt, text[:TEXT_MAX] if text is not None else None)


async def record_progress(job_id: str, attempt: int, message: str) -> None:
    """A progress event, dropping the job's progress rows beyond its latest PROGRESS_KEPT."""
    await record(job_id, "progress", attempt=attempt, text=message)
    await TRIM.execute(job_id, job_id)


async def for_job(job_id: str) -> list[JSONObject]:
    """The job's events, oldest first: `{seq, at, kind, attempt, text}`."""
    rows = await (
        JobEvent.select(JobEvent.seq, JobEvent.at_ms, JobEvent.kind, JobEvent.attempt, JobEvent.text)
        .where(JobEvent.job_id == job_id)
        .order_by(JobEvent.seq)
    )
    return [
        {
            "seq": int(r["seq"]),
            "at": iso(int(r["at_ms"])),
            "kind": r["kind"],
            "attempt": r["attempt"],
            "text": r["text"],
        }
        for r in rows
    ]


async def purge_of_jobs_before(cutoff_ms: int) -> None:
    """The events of the jobs created before `cutoff_ms` (run just before those jobs are deleted)."""
    await JobEvent.delete().where(JobEvent.job_id.is_in(Job.select(Job.id).where(Job.created_ms < cutoff_ms)))
