"""A claimed job's completion on PostgreSQL in one statement: the job fenced on the claimer's
attempt, its `completed` event, the owner's notification, and its receipt re-signed (a
compare-and-swap on the revision the claim read, the superseded revision archived, the
attempt's provider cost added beside it).

One statement is one round trip and one commit, where the runner's transaction took seven
round trips (BEGIN, the cost, the completion, the receipt's read, its re-sign, the
notification, COMMIT). It is all or nothing: the job row is locked first (`FOR UPDATE`, which
re-reads it if another transaction changed it meanwhile), the receipt is re-signed only while
that row is still this attempt's, and the job is completed only if the receipt was. When the
statement changes nothing (the attempt was fenced out, or the receipt was re-signed since the
claim read it) the runner writes the outcome as before, in a transaction that reads everything
afresh (core/jobs/job_runner.py), so this path never decides an outcome the other would not.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tollway._core.basics.events import JOB_UPDATES
from tollway._core.basics.ids import now_ms
from tollway._core.jobs import jobs
from tollway._core.receipts.receipts import ReceiptBook
from tollway._core.storage import sql

# Values: job id, attempt; the provider cost (twice); the re-sign (Revision.resign_values); the
# archived revision (Revision.archive_values); the result, updated_ms, finished_ms; the
# notification (notifications.new_row); whether it publishes the update itself (the event
# bus's pg_notify, as core/jobs/jobs.py's statements: `publishes_in_sql`).
COMPLETE_AND_RESIGN = sql.Statement(
    "WITH j AS (SELECT id FROM tw_jobs WHERE id = {} AND attempt = {} AND status = 'processing' FOR UPDATE), "
    "r AS (UPDATE tw_receipts SET provider_cost = COALESCE(provider_cost + {}, provider_cost, {}), body = {}, "
    "revision = {}, status = {}, execution_status = {}, duration_ms = COALESCE({}, duration_ms) "
    "WHERE receipt_id = {} AND revision = {} AND EXISTS (SELECT 1 FROM j) RETURNING receipt_id), "
    "a AS (INSERT INTO tw_receipt_revisions (id, receipt_id, revision, body, created_ms) "
    "SELECT {}::text, receipt_id, {}::bigint, {}::text, {}::bigint FROM r), "
    "c AS (UPDATE tw_jobs SET status = 'completed', result = {}, message = NULL, updated_ms = {}, "
    "finished_ms = {}, lease_until_ms = NULL WHERE id = (SELECT id FROM j) AND EXISTS (SELECT 1 FROM r) "
    "RETURNING id, updated_ms, attempt), "
    "e AS (INSERT INTO tw_job_events (job_id, at_ms, kind, attempt, text) "
    "SELECT id, updated_ms, 'completed', attempt, NULL FROM c), "
    "n AS (INSERT INTO tw_notifications (id, agent_id, type, title, body, metadata, read, created_ms, seq) "
    "SELECT {}::text, {}::text, {}::text, {}::text, {}::text, {}::text, {}::boolean, {}::bigint, {}::bigint "
    "FROM c) SELECT id, CASE WHEN {}::boolean THEN pg_notify('tollway_job_updates', id || ' completed') END "
    "AS notified FROM c"
)


def applies(claimed: jobs.Claimed) -> bool:
    """Whether `complete_and_resign` can write this job's completion: a run's (fenced on its
    attempt) on PostgreSQL, of a job whose receipt the claim read."""
    return (
        claimed.attempt is not None and claimed.receipt is not None and bool(claimed.receipt_id) and sql.on_postgres()
    )


async def complete_and_resign(
    receipts: ReceiptBook,
    claimed: jobs.Claimed,
    result: Any,
    notification: tuple[Any, ...],
    *,
    duration_ms: int | None,
    provider_cost: int | None,
    bus: Any,
) -> bool:
    """Write the completion (`applies` must hold); False when nothing was written (the attempt
    was fenced out, or the receipt changed since the claim): the caller's transaction then
    writes the outcome from what the database holds now."""
    receipt, receipt_id = claimed.receipt, claimed.receipt_id
    assert receipt is not None and receipt_id is not None and claimed.attempt is not None
    revision = receipts.next_revision(receipt_id, receipt.body, receipt.revision, {"execution_status": "completed"})
    notifying = jobs.publishes_in_sql(bus, JOB_UPDATES, "id || ' completed'", COMPLETE_AND_RESIGN)
    now = now_ms()
    cost = provider_cost or None
    done = await COMPLETE_AND_RESIGN.row(
        claimed.id,
        claimed.attempt,
        cost,
        cost,
        *revision.resign_values(duration_ms),
        *revision.archive_values(),
        msgspec.json.encode(result).decode(),
        now,
        now,
        *notification,
        notifying,
    )
    if done is None:
        return False
    await receipts.resigned(receipt.created_ms)
    return True
