"""Asynchronous jobs: the job row, claiming under a lease, fenced outcomes, and
the Job resource (docs/jobs.md).

A job is created in the same transaction as its charge and receipt. A job whose
x402 payment has not settled yet waits (`waiting_for = 'payment'`, still `pending`)
and no worker claims it until the payment settles (`release`) or fails. A worker
claims it (`FOR UPDATE SKIP LOCKED` on PostgreSQL), which bumps `attempt`; the
outcome is written only `WHERE attempt = <the claimer's attempt>`, so a worker
whose lease expired (and whose job another worker re-ran) cannot overwrite it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from tollway._core.basics.events import JOB_UPDATES, JOBS_NEW
from tollway._core.basics.ids import iso, now_ms
from tollway._core.jobs import job_events
from tollway._core.jobs.tables import Job
from tollway._core.storage import sql
from tollway._core.wire.calls import JobStatus

RETENTION_DAYS = 30
TERMINAL = ("completed", "failed")

# error_code -> (error_category, error_status): the stable failure codes (docs/api.md)
FAILURE_CODES: dict[str, tuple[str, int]] = {
    "insufficient_funds": ("payment_required", 402),
    "payment_failed": ("payment_required", 402),
    "invalid_input": ("bad_request", 400),
    "content_blocked": ("bad_request", 400),
    "rate_limited": ("upstream_rejected", 429),
    "provider_unavailable": ("upstream_unavailable", 503),
    "provider_auth": ("upstream_rejected", 503),  # as the inline refusal (core/plugin_api/upstream.py)
    "enrichment_exhausted": ("not_found", 404),
    "target_unreachable": ("bad_request", 400),
    "source_unsupported": ("bad_request", 422),
    "checkout_failed": ("upstream_rejected", 502),
    "internal_error": ("internal", 500),
    "cancelled": ("cancelled", 409),  # ours: the operator cancelled the job (core/jobs/cancel.py)
}
CANCELLED = "cancelled"


@dataclasses.dataclass(frozen=True)
class ClaimedReceipt:
    """A claimed job's receipt as the claim read it: what its completion re-signs."""

    body: str
    revision: int
    created_ms: int


@dataclasses.dataclass(frozen=True)
class Claimed:
    id: str
    tool: str
    agent_id: str
    input: bytes
    attempt: int | None  # None: a job finished from outside a run (core/jobs/parked.py)
    receipt_id: str | None
    receipt: ClaimedReceipt | None = None  # read by the claim on PostgreSQL (None: read when it is re-signed)


# The job's life (create, release, claim, heartbeat, report, park, complete, fail) stays in
# named statements: each is one guarded UPDATE ... WHERE ... RETURNING (the claim a subquery
# with FOR UPDATE SKIP LOCKED, the outcomes fenced on the claimer's attempt) on the worker's
# path bench/jobs.py measures, and the ones that wake someone carry the event bus's
# pg_notify(...) in their RETURNING list (published at commit, no round trip), which the ORM
# cannot say. Each comes plain and, where it wakes someone, notifying; reads and the
# retention sweep are table queries.
CREATE = {
    False: sql.Statement(
        "INSERT INTO tw_jobs (id, tool, agent_id, status, input, receipt_id, attempt, created_ms, updated_ms, "
        "waiting_for, message) VALUES ({}, {}, {}, 'pending', {}, {}, 0, {}, {}, {}, {}) RETURNING id"
    ),
    True: sql.Statement(
        "INSERT INTO tw_jobs (id, tool, agent_id, status, input, receipt_id, attempt, created_ms, updated_ms, "
        "waiting_for, message) VALUES ({}, {}, {}, 'pending', {}, {}, 0, {}, {}, {}, {}) "
        "RETURNING id, pg_notify('tollway_jobs_new', id) AS notified"
    ),
}
# On PostgreSQL the `accepted` event rides the insert as a data-modifying CTE (one round trip
# on the paid path instead of two); SQLite has no such CTEs and writes it in a second statement.
CREATE_WITH_EVENT = {
    False: sql.Statement(
        "WITH j AS (INSERT INTO tw_jobs (id, tool, agent_id, status, input, receipt_id, attempt, created_ms, "
        "updated_ms, waiting_for, message) VALUES ({}, {}, {}, 'pending', {}, {}, 0, {}, {}, {}, {}) "
        "RETURNING id, created_ms, message), e AS (INSERT INTO tw_job_events (job_id, at_ms, kind, attempt, text) "
        "SELECT id, created_ms, 'accepted', NULL, message FROM j) SELECT id FROM j"
    ),
    True: sql.Statement(
        "WITH j AS (INSERT INTO tw_jobs (id, tool, agent_id, status, input, receipt_id, attempt, created_ms, "
        "updated_ms, waiting_for, message) VALUES ({}, {}, {}, 'pending', {}, {}, 0, {}, {}, {}, {}) "
        "RETURNING id, created_ms, message), e AS (INSERT INTO tw_job_events (job_id, at_ms, kind, attempt, text) "
        "SELECT id, created_ms, 'accepted', NULL, message FROM j) "
        "SELECT id, pg_notify('tollway_jobs_new', id) AS notified FROM j"
    ),
}
RELEASE = {
    False: sql.Statement(
        "UPDATE tw_jobs SET waiting_for = NULL, message = NULL, updated_ms = {} WHERE id = {} AND waiting_for = {} "
        "AND status = 'pending' RETURNING id"
    ),
    True: sql.Statement(
        "UPDATE tw_jobs SET waiting_for = NULL, message = NULL, updated_ms = {} WHERE id = {} AND waiting_for = {} "
        "AND status = 'pending' RETURNING id, pg_notify('tollway_jobs_new', id) AS notified"
    ),
}
# Keyed by notifying, without SKIP LOCKED (SQLite): the oldest runnable jobs, pending or with an expired lease,
# at most `{}` of them (a worker asks for as many as it has free slots, so one statement fills
# them, and fewer than asked means the queue is empty: no second claim to find that out). The
# `status IN (...)` term is the predicate of the partial index tw_jobs_unfinished, written out
# so SQLite's planner uses that index too (PostgreSQL's infers it): the claim reads the
# unfinished jobs only, never the finished ones before them. With SKIP LOCKED (PostgreSQL)
# the claim's event (core/jobs/job_events.py) is written by the same statement, from a CTE
# over the claimed rows (`started` for attempt 1, else `retried`), so a claim that finds
# nothing (a worker's poll) costs one statement and writes nothing, and each claimed row
# comes with its receipt as it stands (body, revision, day), which the completion re-signs
# in its own statement (core/jobs/completion.py); without, `claim` writes the events in a
# transaction with the claim.
CLAIM = {
    False: sql.Statement(
        "UPDATE tw_jobs SET status = 'processing', attempt = attempt + 1, worker_id = {}, lease_until_ms = {}, "
        "updated_ms = {}, started_ms = COALESCE(started_ms, {}) WHERE id IN (SELECT id FROM tw_jobs WHERE "
        "status IN ('pending', 'processing') AND ((status = 'pending' AND waiting_for IS NULL) OR "
        "(status = 'processing' AND lease_until_ms < {})) ORDER BY created_ms LIMIT {}) "
        "RETURNING id, tool, agent_id, input, attempt, receipt_id"
    ),
    True: sql.Statement(
        "UPDATE tw_jobs SET status = 'processing', attempt = attempt + 1, worker_id = {}, lease_until_ms = {}, "
        "updated_ms = {}, started_ms = COALESCE(started_ms, {}) WHERE id IN (SELECT id FROM tw_jobs WHERE "
        "status IN ('pending', 'processing') AND ((status = 'pending' AND waiting_for IS NULL) OR "
        "(status = 'processing' AND lease_until_ms < {})) ORDER BY created_ms LIMIT {}) "
        "RETURNING id, tool, agent_id, input, attempt, receipt_id, "
        "pg_notify('tollway_job_updates', id || ' processing') AS notified"
    ),
}
# PostgreSQL's claim, SKIP LOCKED; its last value says whether it publishes the update itself
# (`publishes_in_sql`): one text for both, the notification under a CASE.
CLAIM_SKIP_LOCKED = sql.Statement(
    "WITH p AS MATERIALIZED (SELECT id FROM tw_jobs WHERE status IN ('pending', 'processing') AND "
    "((status = 'pending' AND waiting_for IS NULL) OR (status = 'processing' AND lease_until_ms < {})) "
    "ORDER BY created_ms LIMIT {} FOR UPDATE SKIP LOCKED), c AS (UPDATE tw_jobs SET status = 'processing', "
    "attempt = attempt + 1, worker_id = {}, lease_until_ms = {}, updated_ms = {}, "
    "started_ms = COALESCE(started_ms, {}) FROM p WHERE tw_jobs.id = p.id RETURNING tw_jobs.id, tool, "
    "agent_id, input, attempt, receipt_id, updated_ms, worker_id), e AS (INSERT INTO tw_job_events (job_id, "
    "at_ms, kind, attempt, text) SELECT c.id, c.updated_ms, CASE WHEN c.attempt = 1 THEN 'started' ELSE "
    "'retried' END, c.attempt, c.worker_id FROM c) SELECT c.id, c.tool, c.agent_id, c.input, c.attempt, "
    "c.receipt_id, r.body AS receipt_body, r.revision AS receipt_revision, r.created_ms AS receipt_created_ms, "
    "CASE WHEN {}::boolean THEN pg_notify('tollway_job_updates', c.id || ' processing') END AS notified "
    "FROM c LEFT JOIN tw_receipts r ON r.receipt_id = c.receipt_id"
)
HEARTBEAT = sql.Statement(
    "UPDATE tw_jobs SET lease_until_ms = {} WHERE id = {} AND attempt = {} AND status = 'processing' RETURNING id"
)
REPORT = {
    False: sql.Statement(
        "UPDATE tw_jobs SET message = {}, updated_ms = {} WHERE id = {} AND attempt = {} AND status = 'processing' "
        "RETURNING id"
    ),
    True: sql.Statement(
        "UPDATE tw_jobs SET message = {}, updated_ms = {} WHERE id = {} AND attempt = {} AND status = 'processing' "
        "RETURNING id, pg_notify('tollway_job_updates', id || ' processing') AS notified"
    ),
}
PARK = {
    False: sql.Statement(
        "UPDATE tw_jobs SET lease_until_ms = {}, message = {}, updated_ms = {} WHERE id = {} AND attempt = {} "
        "AND status = 'processing' RETURNING id"
    ),
    True: sql.Statement(
        "UPDATE tw_jobs SET lease_until_ms = {}, message = {}, updated_ms = {} WHERE id = {} AND attempt = {} "
        "AND status = 'processing' RETURNING id, pg_notify('tollway_job_updates', id || ' processing') AS notified"
    ),
}
# An outcome, keyed by (fenced, notifying): fenced on the claimer's attempt, or (not fenced)
# written by whoever holds the job, for a job finished from outside a run (a parked job, a
# job that never ran).
COMPLETE = {
    (True, False): sql.Statement(
        "UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, finished_ms = {}, "
        "lease_until_ms = NULL WHERE id = {} AND attempt = {} AND status = 'processing' RETURNING id"
    ),
    (True, True): sql.Statement(
        "UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, finished_ms = {}, "
        "lease_until_ms = NULL WHERE id = {} AND attempt = {} AND status = 'processing' "
        "RETURNING id, pg_notify('tollway_job_updates', id || ' completed') AS notified"
    ),
    (False, False): sql.Statement(
        "UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, finished_ms = {}, "
        "lease_until_ms = NULL WHERE id = {} AND status IN ('pending', 'processing') RETURNING id"
    ),
    (False, True): sql.Statement(
        "UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, finished_ms = {}, "
        "lease_until_ms = NULL WHERE id = {} AND status IN ('pending', 'processing') "
        "RETURNING id, pg_notify('tollway_job_updates', id || ' completed') AS notified"
    ),
}
# The claimer's completion on PostgreSQL, its `completed` event in the same statement (as CREATE_WITH_EVENT).
COMPLETE_WITH_EVENT = {
    False: sql.Statement(
        "WITH c AS (UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, "
        "finished_ms = {}, lease_until_ms = NULL WHERE id = {} AND attempt = {} AND status = 'processing' "
        "RETURNING id, updated_ms, attempt), e AS (INSERT INTO tw_job_events (job_id, at_ms, kind, attempt, text) "
        "SELECT id, updated_ms, 'completed', attempt, NULL FROM c) SELECT id FROM c"
    ),
    True: sql.Statement(
        "WITH c AS (UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, "
        "finished_ms = {}, lease_until_ms = NULL WHERE id = {} AND attempt = {} AND status = 'processing' "
        "RETURNING id, updated_ms, attempt), e AS (INSERT INTO tw_job_events (job_id, at_ms, kind, attempt, text) "
        "SELECT id, updated_ms, 'completed', attempt, NULL FROM c) "
        "SELECT id, pg_notify('tollway_job_updates', id || ' completed') AS notified FROM c"
    ),
}
FAIL = {
    (True, False): sql.Statement(
        "UPDATE tw_jobs SET status = 'failed', error = {}, error_code = {}, error_category = {}, error_status = {}, "
        "message = NULL, waiting_for = NULL, updated_ms = {}, finished_ms = {}, lease_until_ms = NULL "
        "WHERE id = {} AND attempt = {} AND status = 'processing' RETURNING id"
    ),
    (True, True): sql.Statement(
        "UPDATE tw_jobs SET status = 'failed', error = {}, error_code = {}, error_category = {}, error_status = {}, "
        "message = NULL, waiting_for = NULL, updated_ms = {}, finished_ms = {}, lease_until_ms = NULL "
        "WHERE id = {} AND attempt = {} AND status = 'processing' "
        "RETURNING id, pg_notify('tollway_job_updates', id || ' failed') AS notified"
    ),
    (False, False): sql.Statement(
        "UPDATE tw_jobs SET status = 'failed', error = {}, error_code = {}, error_category = {}, error_status = {}, "
        "message = NULL, waiting_for = NULL, updated_ms = {}, finished_ms = {}, lease_until_ms = NULL "
        "WHERE id = {} AND status IN ('pending', 'processing') RETURNING id"
    ),
    (False, True): sql.Statement(
        "UPDATE tw_jobs SET status = 'failed', error = {}, error_code = {}, error_category = {}, error_status = {}, "
        "message = NULL, waiting_for = NULL, updated_ms = {}, finished_ms = {}, lease_until_ms = NULL "
        "WHERE id = {} AND status IN ('pending', 'processing') "
        "RETURNING id, pg_notify('tollway_job_updates', id || ' failed') AS notified"
    ),
}


def publishes_in_sql(bus: Any, channel: str, payload_sql: str, statement: sql.Statement) -> bool:
    """Whether `bus` publishes from SQL, so the notifying variant (`statement`) is the one to run:
    its RETURNING list carries exactly the bus's `pg_notify(...)` expression."""
    expr = bus.notify_sql(channel, payload_sql) if bus is not None else None
    if expr is None:
        return False
    if expr not in statement.template:
        raise ValueError(f"the event bus publishes with {expr!r}, which {statement!r} does not carry")
    return True


WAITING_FOR_PAYMENT = "payment"
PAYMENT_WAIT_MESSAGE = "Waiting for the payment to settle: the job starts once it has."


async def create(
    *,
    job_id: str,
    tool: str,
    agent_id: str,
    input_json: str,
    receipt_id: str | None,
    bus: Any = None,
    payment_settled: bool = True,
) -> None:
    """The job row; with `payment_settled=False` it waits for its payment (no worker claims it)."""
    now = now_ms()
    waiting, message = (None, None) if payment_settled else (WAITING_FOR_PAYMENT, PAYMENT_WAIT_MESSAGE)
    notifying = payment_settled and publishes_in_sql(bus, JOBS_NEW, "id", CREATE[True])
    args = (job_id, tool, agent_id, input_json, receipt_id, now, now, waiting, message)
    if sql.on_postgres():
        await CREATE_WITH_EVENT[notifying].execute(*args)
        return
    async with sql.transaction():  # the caller's, on the paid path
        await CREATE[notifying].execute(*args)
        await job_events.record(job_id, "accepted", text=message)


async def waiting_for_payment(receipt_id: str) -> dict[str, Any] | None:
    """The job of `receipt_id` if it is still waiting for its payment."""
    return (
        await Job.select()
        .where(Job.receipt_id == receipt_id, Job.waiting_for == WAITING_FOR_PAYMENT, Job.status == "pending")
        .first()
    )


async def release(job_id: str, bus: Any = None) -> bool:
    """The job's payment settled: it becomes claimable (workers are woken by the caller after its commit)."""
    notifying = publishes_in_sql(bus, JOBS_NEW, "id", RELEASE[True])
    async with sql.transaction():  # the reconciler's
        row = await RELEASE[notifying].row(now_ms(), job_id, WAITING_FOR_PAYMENT)
        if row is not None:
            await job_events.record(job_id, "released", text="Its payment settled.")
    return row is not None


async def claim(worker_id: str, lease_s: float, *, skip_locked: bool, bus: Any = None) -> Claimed | None:
    """Take the oldest runnable job: pending, or processing with an expired lease."""
    found = await claim_many(worker_id, lease_s, 1, skip_locked=skip_locked, bus=bus)
    return found[0] if found else None


async def claim_many(
    worker_id: str, lease_s: float, limit: int, *, skip_locked: bool, bus: Any = None
) -> list[Claimed]:
    """Take the oldest runnable jobs, at most `limit`: fewer means no other job was runnable
    (or, with SKIP LOCKED, all the others were being claimed by someone else)."""
    now = now_ms()
    lease = now + int(lease_s * 1000)
    if skip_locked:  # the events are the statement's own
        notifying = publishes_in_sql(bus, JOB_UPDATES, "c.id || ' processing'", CLAIM_SKIP_LOCKED)
        rows = await CLAIM_SKIP_LOCKED.rows(now, limit, worker_id, lease, now, now, notifying)
    else:
        notifying = publishes_in_sql(bus, JOB_UPDATES, "id || ' processing'", CLAIM[True])
        async with sql.transaction():
            rows = await CLAIM[notifying].rows(worker_id, lease, now, now, now, limit)
            for row in rows:
                attempt = int(row["attempt"])
                await job_events.record(row["id"], job_events.claimed_kind(attempt), attempt=attempt, text=worker_id)
    return [
        Claimed(
            row["id"],
            row["tool"],
            row["agent_id"],
            row["input"].encode(),
            int(row["attempt"]),
            row["receipt_id"],
            None
            if row.get("receipt_body") is None
            else ClaimedReceipt(row["receipt_body"], int(row["receipt_revision"]), int(row["receipt_created_ms"])),
        )
        for row in rows
    ]


async def heartbeat(job_id: str, attempt: int, lease_s: float) -> bool:
    """Extend the lease; False when the job is no longer ours (fenced out)."""
    row = await HEARTBEAT.row(now_ms() + int(lease_s * 1000), job_id, attempt)
    return row is not None


async def report(job_id: str, attempt: int, message: str, bus: Any = None) -> bool:
    """A running job's progress `message` (which step it is on), fenced like its outcome;
    push subscribers are told. False when the job is no longer this attempt's."""
    notifying = publishes_in_sql(bus, JOB_UPDATES, "id || ' processing'", REPORT[True])
    async with sql.transaction():
        row = await REPORT[notifying].row(message[:500], now_ms(), job_id, attempt)
        if row is not None:
            await job_events.record_progress(job_id, attempt, message)
    if row is not None and bus is not None and not notifying:
        await bus.publish(JOB_UPDATES, f"{job_id} processing")
    return row is not None


async def complete(job_id: str, attempt: int | None, result: Any, bus: Any = None) -> bool:
    now = now_ms()
    fenced = attempt is not None
    notifying = publishes_in_sql(bus, JOB_UPDATES, "id || ' completed'", COMPLETE[fenced, True])
    if fenced and sql.on_postgres():
        done = await COMPLETE_WITH_EVENT[notifying].row(msgspec.json.encode(result).decode(), now, now, job_id, attempt)
        return done is not None
    async with sql.transaction():  # the runner's, with the receipt and the notification
        row = await COMPLETE[fenced, notifying].row(
            msgspec.json.encode(result).decode(), now, now, job_id, *((attempt,) if fenced else ())
        )
        if row is not None:
            await job_events.record(job_id, "completed", attempt=attempt)
    return row is not None


async def park(job_id: str, attempt: int, message: str, bus: Any = None, *, retry_after_s: float | None = None) -> bool:
    """A run that handed the job to someone else (a seller fulfils it): the job stays
    `processing` with no lease, so no worker claims it again, until it is finished from
    outside (`core/jobs/parked.py`). With `retry_after_s` the run is waiting on someone it
    must ask again (a merchant that did not answer): the job's lease is set to run out then,
    and a worker claims it as the next attempt, exactly as a job whose worker died. False
    when the attempt was fenced out."""
    now = now_ms()
    wake = None if retry_after_s is None else now + max(int(retry_after_s * 1000), 0)
    notifying = publishes_in_sql(bus, JOB_UPDATES, "id || ' processing'", PARK[True])
    async with sql.transaction():
        row = await PARK[notifying].row(wake, message[:500], now, job_id, attempt)
        if row is not None:
            await job_events.record(job_id, "parked", attempt=attempt, text=message)
    return row is not None


async def fail(job_id: str, attempt: int | None, *, code: str, message: str, bus: Any = None) -> bool:
    """Record a failure; `attempt=None` fails a job that never ran (e.g. unknown tool)."""
    category, status = FAILURE_CODES.get(code, FAILURE_CODES["internal_error"])
    if code not in FAILURE_CODES:
        code = "internal_error"
    text = f"{message} (ref: {job_id})"
    now = now_ms()
    fenced = attempt is not None
    notifying = publishes_in_sql(bus, JOB_UPDATES, "id || ' failed'", FAIL[fenced, True])
    async with sql.transaction():  # the runner's, with the receipt, the refund and the notification
        row = await FAIL[fenced, notifying].row(
            text, code, category, status, now, now, job_id, *((attempt,) if fenced else ())
        )
        if row is not None:
            cancelled = code == CANCELLED
            await job_events.record(
                job_id,
                "cancelled" if cancelled else "failed",
                attempt=attempt,
                text=message if cancelled else f"{code}: {message}",
            )
    return row is not None


async def get(job_id: str) -> dict[str, Any] | None:
    return await Job.select().where(Job.id == job_id).first()


def resource(row: Any) -> JobStatus:
    """The Job resource: result only when completed, error fields only when failed."""
    job = JobStatus(
        request_id=row["id"],
        status=row["status"],
        tool=row["tool"],
        receipt_id=row["receipt_id"],
        created_at=iso(int(row["created_ms"])),
        updated_at=iso(int(row["updated_ms"])),
    )
    if row.get("message") is not None:
        job.message = row["message"]
    if row["status"] == "completed":
        job.result = msgspec.json.decode(row["result"]) if row["result"] is not None else None
    elif row["status"] == "failed":
        job.error, job.error_code = row["error"], row["error_code"]
        job.error_category, job.error_status = row["error_category"], row["error_status"]
    return job


async def purge_older_than(days: int = RETENTION_DAYS) -> int:
    """Delete the jobs created more than `days` ago, and their events."""
    cutoff = now_ms() - days * 86_400_000
    async with sql.transaction():
        await job_events.purge_of_jobs_before(cutoff)
        gone = await Job.delete().where(Job.created_ms < cutoff).returning(Job.id)
    return len(gone)
