"""The operator's reads of jobs (the console's jobs pages, through `Platform.job_counts`,
`unfinished_jobs` and `job_record`): how many jobs are in each state, the oldest ones not
finished (a processing job whose lease ran out is stuck: its worker died and the next sweep
gives it to another), and one job's record. A job's input and result are the agent's own
data and may hold anything it sent: they are never read here."""

from __future__ import annotations

from piccolo.query.functions.aggregate import Count

from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.json_values import JSONObject
from tollway._core.jobs.tables import Job

UNFINISHED = ("pending", "processing")
_COLUMNS = (
    Job.id,
    Job.tool,
    Job.agent_id,
    Job.status,
    Job.attempt,
    Job.lease_until_ms,
    Job.created_ms,
    Job.started_ms,
    Job.finished_ms,
    Job.error_code,
    Job.error,
    Job.receipt_id,
    Job.message,
    Job.waiting_for,
)


async def job_counts() -> list[JSONObject]:
    """`{status, count}` for every state that has jobs, by name."""
    rows = await Job.select(Job.status, Count(alias="count")).group_by(Job.status).order_by(Job.status)
    return [{"status": r["status"], "count": int(r["count"])} for r in rows]


def _record(r: dict, now: int) -> JSONObject:
    started, finished, lease = r["started_ms"], r["finished_ms"], r["lease_until_ms"]
    return {
        "job_id": r["id"],
        "tool": r["tool"],
        "agent_id": r["agent_id"],
        "status": r["status"],
        "attempt": int(r["attempt"] or 0),
        "created_at": iso(r["created_ms"]),
        "started_at": iso(started) if started else None,
        "finished_at": iso(finished) if finished else None,
        "age_s": round((now - int(r["created_ms"])) / 1000, 1),
        "run_s": round((int(finished or now) - int(started)) / 1000, 3) if started else None,
        "stuck": r["status"] == "processing" and lease is not None and int(lease) < now,
        "waiting_for": r["waiting_for"],
        "message": r["message"],
        "error_code": r["error_code"],
        "error": r["error"],
        "receipt_id": r["receipt_id"],
    }


async def unfinished_jobs(limit: int) -> list[JSONObject]:
    """The `limit` oldest jobs not finished (pending or processing), oldest first."""
    rows = await Job.select(*_COLUMNS).where(Job.status.is_in(list(UNFINISHED))).order_by(Job.created_ms).limit(limit)
    now = now_ms()
    return [_record(r, now) for r in rows]


async def job_record(job_id: str) -> JSONObject | None:
    """One job's record (never its input or result), or None."""
    row = await Job.select(*_COLUMNS).where(Job.id == job_id).first()
    return _record(row, now_ms()) if row else None
