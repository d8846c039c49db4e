"""The operator's cancel of a job (`Platform.cancel_job`, core/jobs/cancel.py) on SQLite and
PostgreSQL, with real workers: a pending job fails `cancelled` and its credits come back once;
a running job's late result is discarded and nothing is charged, and its worker goes on; a
worker notices the cancel at its next heartbeat and stops the run; a finished job is left as
it is; and on PostgreSQL a cancel racing a finishing worker ends in exactly one outcome."""

from __future__ import annotations

import asyncio

import pytest
from eth_account import Account

from tests.support.jobs_plugin import JobsPlugin
from tollway._core.credits.tables import LedgerEntry
from tollway._core.jobs import jobs
from tollway._core.receipts.tables import Receipt
from tollway._runtime.worker import Worker
from tollway.testing import (
    LateSettlement,
    credits_session,
    http_client,
    ledger_problems,
    pay_402,
    wait_for_job,
    worker_for,
)


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("jobs", JobsPlugin())])


async def _balance(client, auth) -> str:
    return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]


async def _refunds(receipt_id: str) -> int:
    return await LedgerEntry.count().where((LedgerEntry.kind == "refund") & (LedgerEntry.reference == receipt_id))


async def _kinds(kernel, job_id: str) -> list[str]:
    return [e["kind"] for e in await kernel.platform.job_events(job_id)]


async def test_a_pending_job_cancelled_twice_fails_cancelled_and_is_refunded_once(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()
        job_id, receipt_id = accepted["request_id"], accepted["receipt_id"]
        assert await _balance(client, auth) == "0.998000"

        assert await kernel.platform.cancel_job(job_id, "  the agent asked  by mail. ") == "cancelled"
        assert await kernel.platform.cancel_job(job_id, "again") == "finished"  # nothing more refunded
        assert await kernel.platform.cancel_job("req_nosuchjob", None) == "not_found"

        worker = worker_for(kernel)  # a worker never runs it
        worker.start()
        try:
            other = (await client.post("/v1/tools/test/add-numbers", json={"a": 2}, headers=auth)).json()
            assert (await wait_for_job(client, other["request_id"], auth, every_s=0.05))["status"] == "completed"
        finally:
            await worker.stop()
        job = (await client.get(f"/v1/requests/{job_id}", headers=auth)).json()
        balance = await _balance(client, auth)
        notes = (await client.get("/v1/tools/notifications", headers=auth)).json()["notifications"]
    assert job["status"] == "failed" and job["error_code"] == "cancelled" and "result" not in job
    assert (job["error_category"], job["error_status"]) == ("cancelled", 409)
    assert job["error"] == f"Cancelled by the operator: the agent asked by mail. (ref: {job_id})"
    assert balance == "0.998000"  # 1 - 0.002 (the other job) ; the cancelled one came back
    assert await _refunds(receipt_id) == 1
    revisions = await kernel.receipts.revisions(receipt_id)
    assert [(r["status"], r["execution_status"]) for r in revisions] == [("settled", "pending"), ("refunded", "failed")]
    failed = [n for n in notes if n["type"] == "job_failed"]
    assert len(failed) == 1 and failed[0]["metadata"]["errorCode"] == "cancelled"
    assert failed[0]["metadata"]["refunded"] is True
    assert await _kinds(kernel, job_id) == ["accepted", "cancelled"]
    assert (await kernel.platform.job_events(job_id))[-1][
        "text"
    ] == "Cancelled by the operator: the agent asked by mail."
    assert await ledger_problems() == []


async def test_a_running_job_cancelled_has_its_late_result_discarded_and_the_worker_goes_on(kernel, tmp_path):
    gate, marker = tmp_path / "gate", tmp_path / "started"
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        body = {"a": 1, "gate": str(gate), "marker": str(marker)}
        accepted = (await client.post("/v1/tools/test/gate-job", json=body, headers=auth)).json()
        job_id, receipt_id = accepted["request_id"], accepted["receipt_id"]
        worker = Worker(kernel, poll_s=0.05, concurrency=1)  # the next job runs only once this run is over
        worker.start()
        try:
            for _ in range(200):
                if marker.exists():
                    break
                await asyncio.sleep(0.025)
            assert marker.exists(), "the tool never started"
            assert await kernel.platform.cancel_job(job_id, None) == "cancelled"
            gate.touch()  # the tool returns its result now (the 30 s lease's heartbeat has not come yet)
            after = (await client.post("/v1/tools/test/add-numbers", json={"a": 2}, headers=auth)).json()
            done = await wait_for_job(client, after["request_id"], auth, every_s=0.05)
        finally:
            await worker.stop()
        job = (await client.get(f"/v1/requests/{job_id}", headers=auth)).json()
        balance = await _balance(client, auth)
    assert done["status"] == "completed" and worker.completed == 1  # the cancelled run wrote nothing
    assert job["status"] == "failed" and job["error_code"] == "cancelled" and "result" not in job
    assert balance == "0.998000"  # only the next job charged
    revisions = await kernel.receipts.revisions(receipt_id)
    assert [(r["status"], r["execution_status"]) for r in revisions] == [("settled", "pending"), ("refunded", "failed")]
    assert await _kinds(kernel, job_id) == ["accepted", "started", "cancelled"]
    assert await ledger_problems() == []


async def test_the_worker_stops_a_cancelled_run_at_its_next_heartbeat(kernel, tmp_path):
    marker = tmp_path / "started"
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        body = {"a": 1, "gate": str(tmp_path / "never"), "marker": str(marker)}
        accepted = (await client.post("/v1/tools/test/gate-job", json=body, headers=auth)).json()
    claimed = await jobs.claim("worker-a", lease_s=0.6, skip_locked=kernel.db.kind == "postgres")
    assert claimed is not None
    run = asyncio.create_task(kernel.job_runner.run_claimed(claimed, lease_s=0.6))
    for _ in range(200):
        if marker.exists():
            break
        await asyncio.sleep(0.025)
    assert await kernel.platform.cancel_job(accepted["request_id"], "stuck upstream") == "cancelled"
    # the gate never opens: the run ends because the heartbeat (every 0.2 s) found the job cancelled
    assert await asyncio.wait_for(run, timeout=5) == "fenced"
    row = await jobs.get(accepted["request_id"])
    assert row["status"] == "failed" and row["error_code"] == "cancelled"
    assert await ledger_problems() == []


async def test_a_finished_job_cannot_be_cancelled_and_nothing_changes(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()
        worker = worker_for(kernel)
        worker.start()
        try:
            done = await wait_for_job(client, accepted["request_id"], auth, every_s=0.05)
        finally:
            await worker.stop()
        before = await kernel.receipts.revisions(accepted["receipt_id"])
        assert await kernel.platform.cancel_job(accepted["request_id"], None) == "finished"
        again = (await client.get(f"/v1/requests/{accepted['request_id']}", headers=auth)).json()
        balance = await _balance(client, auth)
    assert done["status"] == "completed" and again == done
    assert await kernel.receipts.revisions(accepted["receipt_id"]) == before
    assert balance == "0.998000" and await _refunds(accepted["receipt_id"]) == 0
    assert await _kinds(kernel, accepted["request_id"]) == ["accepted", "started", "completed"]


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_a_cancel_racing_a_finishing_worker_ends_in_exactly_one_outcome(kernel):
    """Both write at once from their own connections: the job row's lock orders them, and the
    second finds the job no longer `processing` and writes nothing (no second receipt
    revision, no refund of a completed job, no result on a cancelled one)."""
    rounds = 12
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        ids = [
            (await client.post("/v1/tools/test/add-numbers", json={"a": i}, headers=auth)).json() for i in range(rounds)
        ]
    outcomes = []
    for accepted in ids:
        claimed = await jobs.claim("worker-a", lease_s=30, skip_locked=True)
        assert claimed is not None and claimed.id == accepted["request_id"]
        finished, cancelled = await asyncio.gather(
            kernel.job_runner.job_completed(claimed, {"sum": 1, "pid": 0}),
            kernel.platform.cancel_job(claimed.id, "race"),
        )
        assert (finished == "completed") != (cancelled == "cancelled"), (finished, cancelled)
        row = await jobs.get(claimed.id)
        receipt = (
            await Receipt.select(Receipt.status, Receipt.revision)
            .where(Receipt.receipt_id == accepted["receipt_id"])
            .first()
        )
        refunds = await _refunds(accepted["receipt_id"])
        if finished == "completed":
            assert row["status"] == "completed" and receipt["status"] == "settled" and refunds == 0
        else:
            assert row["status"] == "failed" and row["result"] is None and receipt["status"] == "refunded"
            assert refunds == 1
        assert receipt["revision"] == 2
        outcomes.append(finished)
    assert await ledger_problems() == []


@pytest.mark.parametrize("outcome,final,credited", [("settled", "refunded", 1), ("failed", "not_charged", 0)])
async def test_a_job_waiting_for_its_x402_payment_cancelled_is_refunded_only_if_the_payment_lands(
    kernel, outcome, final, credited
):
    """The charge is still pending when the job is cancelled: the receipt becomes `refund_due`;
    the reconciler then credits the refund once if the payment settles, or marks it
    `not_charged` if it never does, and the job stays cancelled (it never runs)."""
    late, payer = LateSettlement(kernel), Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    reader = {"X-Agent-ID": payer.address}
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/test/add-numbers", json={"a": 1})
        paid = {"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=paid)).json()
        job_id, receipt_id = accepted["request_id"], accepted["receipt_id"]
        assert (await client.get(f"/v1/requests/{job_id}", headers=reader)).json()["status"] == "pending"
        assert await kernel.platform.cancel_job(job_id, None) == "cancelled"
        assert (await kernel.receipts.get(receipt_id))["status"] == "refund_due"
        late.outcome = outcome
        await kernel.reconciler.run_once(grace_s=0)
        await kernel.reconciler.run_once(grace_s=0)  # a second pass changes nothing
        job = (await client.get(f"/v1/requests/{job_id}", headers=reader)).json()
        balance = (await client.get("/v1/balance", headers=reader)).json()
    assert job["status"] == "failed" and job["error_code"] == "cancelled"
    assert (await kernel.receipts.get(receipt_id))["status"] == final
    assert await _refunds(receipt_id) == credited
    assert balance["credits_balance"] == ("0.002000" if credited else "0.000000")
    assert await jobs.claim("worker-a", 30, skip_locked=kernel.db.kind == "postgres") is None
    assert await _kinds(kernel, job_id) == ["accepted", "cancelled"]
    assert await ledger_problems() == []
