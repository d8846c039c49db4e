"""A worker's claims and completions on SQLite and PostgreSQL: a claim takes up to as many jobs
as asked, oldest first (fewer means the queue is empty); on PostgreSQL a run's completion is
one statement (core/jobs/completion.py), all or nothing, and when the receipt changed since
the claim, or the job stopped being the attempt's meanwhile, the outcome is written from
what the database holds then: the receipt re-signed once on top of every change, one
notification, the provider cost counted once."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.jobs_plugin import JobsPlugin
from tests.support.plans import plan
from tollway._core.jobs import completion, jobs, notifications
from tollway._core.jobs.tables import Job, JobEvent
from tollway._core.messages.tables import Notification
from tollway._core.receipts.receipt_signing import verify_receipt
from tollway._core.receipts.tables import Receipt, ReceiptRevision
from tollway.testing import credits_session, http_client


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("jobs", JobsPlugin())])


async def accept(kernel, count: int, tool: str = "add-numbers") -> list[dict]:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        return [(await client.post(f"/v1/tools/test/{tool}", json={"a": i}, headers=auth)).json() for i in range(count)]


def valid(kernel, receipt: dict) -> bool:
    signer = kernel.receipts.signer
    return verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")


async def written_for(job_id: str, receipt_id: str) -> dict:
    """What a completion writes, counted: the job's state, its receipt's, the archive, the
    job's events and notifications."""
    job = await Job.select(Job.status, Job.attempt).where(Job.id == job_id).first()
    receipt = (
        await Receipt.select(Receipt.revision, Receipt.provider_cost, Receipt.execution_status)
        .where(Receipt.receipt_id == receipt_id)
        .first()
    )
    archived = await ReceiptRevision.select(ReceiptRevision.revision).where(ReceiptRevision.receipt_id == receipt_id)
    events = await JobEvent.select(JobEvent.kind).where(JobEvent.job_id == job_id).order_by(JobEvent.seq)
    notes = await Notification.count().where(Notification.metadata.like(f'%"jobId":"{job_id}"%'))
    return {
        "job": (job["status"], job["attempt"]),
        "receipt": (receipt["revision"], receipt["execution_status"], receipt["provider_cost"]),
        "archived": sorted(r["revision"] for r in archived),
        "events": [e["kind"] for e in events],
        "notifications": notes,
    }


async def test_a_claim_takes_up_to_as_many_jobs_as_asked_oldest_first(kernel):
    accepted = await accept(kernel, 3)
    skip = kernel.db.kind == "postgres"
    first = await jobs.claim_many("worker-a", 30, 2, skip_locked=skip, bus=kernel.events)
    assert sorted(c.id for c in first) == sorted(a["request_id"] for a in accepted[:2])  # the two oldest
    assert all(c.attempt == 1 and c.receipt_id for c in first)
    rest = await jobs.claim_many("worker-b", 30, 16, skip_locked=skip, bus=kernel.events)
    assert [c.id for c in rest] == [accepted[2]["request_id"]]  # fewer than asked: the queue is empty
    assert await jobs.claim_many("worker-b", 30, 16, skip_locked=skip, bus=kernel.events) == []
    for claimed in first + rest:
        events = await JobEvent.select(JobEvent.kind, JobEvent.text).where(JobEvent.job_id == claimed.id)
        assert [(e["kind"], e["text"]) for e in events][1:] == [
            ("started", "worker-a" if claimed in first else "worker-b")
        ]
    # on PostgreSQL each claimed job comes with its receipt as it stands, which its completion re-signs
    if skip:
        for claimed in first + rest:
            stored = await Receipt.select(Receipt.body).where(Receipt.receipt_id == claimed.receipt_id).first()
            assert claimed.receipt is not None and claimed.receipt.body == stored["body"]
            assert claimed.receipt.revision == 1


async def test_the_claim_reads_the_index_of_the_unfinished_jobs(kernel):
    """Never every job ever made: the partial index holds the unfinished ones only, in order."""
    if kernel.db.kind == "postgres":
        found = await plan(jobs.CLAIM_SKIP_LOCKED, 1, 16, "worker-a", 1, 1, 1, False)
    else:
        found = await plan(jobs.CLAIM[False], "worker-a", 1, 1, 1, 1, 16)
    assert "tw_jobs_unfinished" in found, found


async def test_a_completion_writes_the_job_its_receipt_its_event_and_its_notification_once(kernel):
    [job] = await accept(kernel, 1)
    claimed = await jobs.claim("worker-a", 30, skip_locked=kernel.db.kind == "postgres", bus=kernel.events)
    assert claimed is not None
    assert completion.applies(claimed) is (kernel.db.kind == "postgres")
    assert await kernel.job_runner.run_claimed(claimed, lease_s=30) == "completed"
    assert await written_for(job["request_id"], job["receipt_id"]) == {
        "job": ("completed", 1),
        "receipt": (2, "completed", 5),  # add_numbers' provider cost
        "archived": [1],
        "events": ["accepted", "started", "completed"],
        "notifications": 1,
    }
    [first, second] = await kernel.receipts.revisions(job["receipt_id"])
    assert (first["revision"], first["execution_status"]) == (1, "pending")
    assert (second["revision"], second["execution_status"]) == (2, "completed")
    assert valid(kernel, first) and valid(kernel, second)
    assert await kernel.job_runner.run_claimed(claimed, lease_s=30) == "fenced"  # one outcome only
    assert (await written_for(job["request_id"], job["receipt_id"]))["notifications"] == 1


async def test_a_receipt_changed_since_the_claim_is_re_signed_on_top_of_that_change(kernel):
    [job] = await accept(kernel, 1)
    claimed = await jobs.claim("worker-a", 30, skip_locked=kernel.db.kind == "postgres", bus=kernel.events)
    assert claimed is not None
    await kernel.receipts.revise(job["receipt_id"], {"memo": "changed meanwhile"})  # after the claim read it
    assert await kernel.job_runner.run_claimed(claimed, lease_s=30) == "completed"
    assert await written_for(job["request_id"], job["receipt_id"]) == {
        "job": ("completed", 1),
        "receipt": (3, "completed", 5),
        "archived": [1, 2],
        "events": ["accepted", "started", "completed"],
        "notifications": 1,
    }
    current = await kernel.receipts.get(job["receipt_id"])
    assert current["memo"] == "changed meanwhile" and current["execution_status"] == "completed"
    assert valid(kernel, current)


@pytest.mark.parametrize("db_kind", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
async def test_the_one_statement_writes_nothing_when_the_receipt_moved_on(kernel):
    """PostgreSQL's alone (SQLite's completion is the runner's transaction)."""
    [job] = await accept(kernel, 1)
    claimed = await jobs.claim("worker-a", 30, skip_locked=True, bus=kernel.events)
    assert claimed is not None and completion.applies(claimed)
    await kernel.receipts.revise(job["receipt_id"], {"memo": "changed meanwhile"})
    before = await written_for(job["request_id"], job["receipt_id"])
    note = notifications.new_row(claimed.agent_id, "job_completed", "t", None, {"jobId": claimed.id})
    written = await completion.complete_and_resign(
        kernel.receipts, claimed, {"sum": 1}, note, duration_ms=3, provider_cost=7, bus=kernel.events
    )
    assert written is False
    assert await written_for(job["request_id"], job["receipt_id"]) == before  # no part of it: all or nothing
    assert before["job"] == ("processing", 1) and before["receipt"] == (2, "pending", None)


async def test_a_job_cancelled_while_its_completion_waits_for_the_row_is_not_completed(kernel):
    """The operator's cancel holds the job's row; the run's completion waits for it, then
    finds the job no longer its attempt's: fenced, its receipt re-signed once, by the cancel."""
    [job] = await accept(kernel, 1)
    claimed = await jobs.claim("worker-a", 30, skip_locked=kernel.db.kind == "postgres", bus=kernel.events)
    assert claimed is not None
    holding, release = asyncio.Event(), asyncio.Event()

    async def cancel() -> None:
        async with kernel.db.transaction():
            assert await jobs.fail(job["request_id"], None, code=jobs.CANCELLED, message="stop")
            holding.set()
            await release.wait()

    if kernel.db.kind != "postgres":  # SQLite's single writer: the cancel simply comes first
        release.set()
        await cancel()
        assert await kernel.job_runner.job_completed(claimed, {"sum": 1}, provider_cost=5) == "fenced"
    else:
        canceller = asyncio.create_task(cancel())
        await holding.wait()
        completing = asyncio.create_task(kernel.job_runner.job_completed(claimed, {"sum": 1}, provider_cost=5))
        await asyncio.sleep(0.3)
        assert not completing.done()  # waiting for the cancel's row lock
        release.set()
        await canceller
        assert await completing == "fenced"
    after = await written_for(job["request_id"], job["receipt_id"])
    assert after["job"] == ("failed", 1)
    assert after["receipt"] == (1, "pending", 5)  # not re-signed by the run; its upstream cost is kept
    assert after["events"] == ["accepted", "started", "cancelled"]
    assert after["notifications"] == 0  # jobs.fail alone: the cancel's notification is parked.fail's
