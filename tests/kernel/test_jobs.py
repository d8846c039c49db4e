"""Asynchronous jobs end to end on SQLite and PostgreSQL: 202 acceptance, polling,
workers, fencing, refunds of failed jobs, notifications, time limits, the
process pool and retention."""

from __future__ import annotations

import asyncio

import pytest
from eth_account import Account

from tests.support.jobs_plugin import JobsPlugin
from tollway._core.credits.tables import LedgerEntry
from tollway._core.jobs import jobs
from tollway._core.jobs.tables import Job
from tollway._core.receipts.tables import Receipt
from tollway._runtime.worker import Worker
from tollway.testing import credits_session, http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("jobs", JobsPlugin())])


async def agent_with_credits(client, amount="1"):
    return await credits_session(client, amount)


async def wait_for_status(client, request_id, headers, statuses=("completed", "failed"), tries=400):
    """Poll briskly; past free_read's 120 reads a minute (a slow run on a busy machine), wait
    as the 429 says and poll on."""
    body: dict = {}
    for _ in range(tries):
        polled = await client.get(f"/v1/requests/{request_id}", headers=headers)
        if polled.status_code == 429:
            await asyncio.sleep(float(polled.headers.get("retry-after", "1")))
            continue
        body = polled.json()
        if body["status"] in statuses:
            return body
        await asyncio.sleep(0.025)
    raise AssertionError(f"job {request_id} stuck in {body.get('status')}")


async def test_credits_paid_job_is_accepted_polled_and_completed(kernel):
    async with http_client(kernel) as client:
        agent_id, auth = await agent_with_credits(client)
        accepted = await client.post("/v1/tools/test/add-numbers", json={"a": 2, "b": 40, "memo": "sum"}, headers=auth)
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        assert set(body) == {"request_id", "tool", "status", "receipt_id", "message"}
        assert body["status"] == "pending" and body["tool"] == "add_numbers"
        pending = (await client.get(f"/v1/requests/{body['request_id']}", headers=auth)).json()
        assert pending["status"] == "pending" and "result" not in pending and "error" not in pending
        stranger = await client.get(
            f"/v1/requests/{body['request_id']}", headers={"X-Agent-ID": Account.create().address}
        )
        assert stranger.status_code == 404 and stranger.json()["error"] == "not_found"

        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            done = await wait_for_status(client, body["request_id"], auth)
            alias = (await client.get(f"/v1/status/{body['request_id']}", headers=auth)).json()
        finally:
            await worker.stop()
        notes = (await client.get("/v1/tools/notifications", headers=auth)).json()
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert done["status"] == "completed" and done["result"]["sum"] == 42
    assert done["receipt_id"] == body["receipt_id"] and done["created_at"] <= done["updated_at"]
    assert alias == done
    assert balance["credits_balance"] == "0.998000"
    receipt = await kernel.receipts.get(body["receipt_id"])
    assert receipt["execution_status"] == "completed" and receipt["status"] == "settled" and receipt["revision"] == 2
    assert receipt["job_id"] == body["request_id"]
    assert receipt["memo"] == "sum"
    assert (await Receipt.select(Receipt.provider_cost).first())["provider_cost"] == 5  # the run's, never served
    assert "provider_cost" not in receipt
    # newest first: the job's notification, then the grant's credit_issued
    assert [n["type"] for n in notes["notifications"]] == ["job_completed", "credit_issued"]
    assert notes["notifications"][0]["metadata"]["jobId"] == body["request_id"]
    assert await Receipt.count() == 1


async def test_x402_paid_job_settles_at_acceptance(kernel):
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/test/add-numbers", json={"a": 1})
        accepted = await client.post(
            "/v1/tools/test/add-numbers",
            json={"a": 1},
            headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])},
        )
        assert accepted.status_code == 202, accepted.text
        assert accepted.headers["PAYMENT-RESPONSE"]
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            done = await wait_for_status(client, accepted.json()["request_id"], {"X-Agent-ID": payer.address})
        finally:
            await worker.stop()
    assert balance["on_chain_balance"] == "0.998000"
    assert done["status"] == "completed" and done["result"]["sum"] == 1


@pytest.mark.parametrize("path,refunded", [("/v1/tools/test/broken-job", True), ("/v1/tools/test/broken-kept", False)])
async def test_failed_job_carries_error_fields_and_is_refunded_when_declared(kernel, path, refunded):
    async with http_client(kernel) as client:
        agent_id, auth = await agent_with_credits(client)
        accepted = (await client.post(path, json={"a": 1}, headers=auth)).json()
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            failed = await wait_for_status(client, accepted["request_id"], auth)
        finally:
            await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()
        notes = (await client.get("/v1/tools/notifications", headers=auth)).json()
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error_code"] == "provider_unavailable"
    assert failed["error_category"] == "upstream_unavailable" and failed["error_status"] == 503
    assert failed["error"].endswith(f"(ref: {accepted['request_id']})")
    receipt = await kernel.receipts.get(accepted["receipt_id"])
    assert receipt["execution_status"] == "failed"
    kept = await Receipt.select(Receipt.provider_cost).where(Receipt.receipt_id == accepted["receipt_id"]).first()
    assert kept["provider_cost"] == 4  # what the failed run spent upstream is the operator's either way
    if refunded:
        assert balance["credits_balance"] == "1.000000"
        assert receipt["status"] == "refunded" and receipt["revision"] == 2
    else:
        assert balance["credits_balance"] == "0.998000"
        assert receipt["status"] == "settled" and receipt["revision"] == 2
    assert notes["notifications"][0]["type"] == "job_failed"
    assert notes["notifications"][0]["metadata"]["refunded"] is refunded


async def test_a_worker_that_lost_its_lease_cannot_write(kernel):
    async with http_client(kernel) as client:
        _, auth = await agent_with_credits(client)
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 5}, headers=auth)).json()
    skip = kernel.db.kind == "postgres"
    first = await jobs.claim("worker-a", lease_s=0.05, skip_locked=skip)
    assert first is not None and first.attempt == 1
    assert await jobs.claim("worker-b", lease_s=30, skip_locked=skip) is None  # leased to a
    await asyncio.sleep(0.1)  # a's lease runs out without a heartbeat
    second = await jobs.claim("worker-b", lease_s=30, skip_locked=skip)
    assert second is not None and second.id == first.id and second.attempt == 2
    assert await jobs.heartbeat(first.id, first.attempt, 30) is False
    assert await kernel.job_runner.run_claimed(first, lease_s=30) == "fenced"
    assert await kernel.job_runner.run_claimed(second, lease_s=30) == "completed"
    assert await kernel.job_runner.run_claimed(second, lease_s=30) == "fenced"  # one outcome only
    row = await Job.select().where(Job.id == first.id).first()
    assert row["status"] == "completed" and row["attempt"] == 2
    revisions = await kernel.receipts.revisions(accepted["receipt_id"])
    assert [r["revision"] for r in revisions] == [1, 2]  # accepted, then completed once
    assert [r["execution_status"] for r in revisions] == ["pending", "completed"]
    spends = await LedgerEntry.count().where(LedgerEntry.kind == "spend")
    assert spends == 1


async def test_a_job_parked_with_retry_after_runs_again_later_charged_once(kernel, tmp_path):
    """`Parked(message, retry_after_s=...)`: the job stays `processing` showing the message, no
    worker claims it before the delay, then a worker runs it again as its next attempt; it is
    charged once and its receipt re-signed once, whatever the number of waits."""
    gate, marker = tmp_path / "gate", tmp_path / "runs"
    async with http_client(kernel) as client:
        _, auth = await agent_with_credits(client)
        body = {"a": 2, "b": 3, "gate": str(gate), "marker": str(marker)}
        accepted = (await client.post("/v1/tools/test/retry-job", json=body, headers=auth)).json()
        skip = kernel.db.kind == "postgres"
        first = await jobs.claim("worker-a", lease_s=30, skip_locked=skip)
        assert first is not None and first.attempt == 1
        assert await kernel.job_runner.run_claimed(first, lease_s=30) == "parked"
        waiting = (await client.get(f"/v1/requests/{accepted['request_id']}", headers=auth)).json()
        assert waiting["status"] == "processing" and waiting["message"] == "asking again shortly"
        assert await jobs.claim("worker-b", lease_s=30, skip_locked=skip) is None  # not before its delay
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            await asyncio.sleep(0.5)  # it runs again (and parks again) while the gate is shut
            gate.touch()
            done = await wait_for_status(client, accepted["request_id"], auth)
        finally:
            await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()
    runs = marker.read_text().split()
    assert len(runs) >= 3  # parked at least twice, then completed
    assert done["status"] == "completed" and done["result"]["sum"] == 5 and "message" not in done
    row = await Job.select().where(Job.id == accepted["request_id"]).first()
    assert row["attempt"] == len(runs) and row["lease_until_ms"] is None
    assert balance["credits_balance"] == "0.998000"
    revisions = await kernel.receipts.revisions(accepted["receipt_id"])
    assert [r["execution_status"] for r in revisions] == ["pending", "completed"]
    assert await LedgerEntry.count().where(LedgerEntry.kind == "spend") == 1


async def test_time_limit_and_process_pool(kernel):
    async with http_client(kernel) as client:
        _, auth = await agent_with_credits(client)
        slow = (await client.post("/v1/tools/test/slow-job", json={"a": 1}, headers=auth)).json()
        cpu = (await client.post("/v1/tools/test/cpu-sum", json={"a": 1000, "b": 1}, headers=auth)).json()
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            timed_out = await wait_for_status(client, slow["request_id"], auth)
            computed = await wait_for_status(client, cpu["request_id"], auth)
        finally:
            await worker.stop()
    assert timed_out["status"] == "failed" and timed_out["error_code"] == "internal_error"
    assert "time limit" in timed_out["error"]
    import os

    assert computed["result"]["sum"] == sum(i * i for i in range(1000)) + 1
    assert computed["result"]["pid"] != os.getpid()  # ran in the pool, not on the event loop


async def test_jobs_older_than_thirty_days_are_purged(kernel):
    from tollway._core.storage.sql import fetch

    async with http_client(kernel) as client:
        _, auth = await agent_with_credits(client)
        old = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()
        new = (await client.post("/v1/tools/test/add-numbers", json={"a": 2}, headers=auth)).json()
    await fetch("UPDATE tw_jobs SET created_ms = created_ms - {} WHERE id = {}", 31 * 86_400_000, old["request_id"])
    task = next(t for t in kernel.periodic_tasks if t.name == "purge_old_jobs")
    await task.run(kernel.context)
    assert await Job.exists().where(Job.id == new["request_id"])
    assert not await Job.exists().where(Job.id == old["request_id"])


async def test_notifications_unread_and_limit(kernel):
    from tollway._core.jobs import notifications

    async with http_client(kernel) as client:
        agent_id, auth = await agent_with_credits(client)
        for i in range(3):
            await notifications.notify(agent_id, "job_completed", f"n{i}", None, {"i": i})
        first = (
            await client.get("/v1/tools/notifications", params={"unread": "true", "limit": 2}, headers=auth)
        ).json()
        rest = (await client.get("/v1/tools/notifications", params={"unread": "true"}, headers=auth)).json()
        everything = (await client.get("/v1/tools/notifications", params={"limit": 500}, headers=auth)).json()
        bad = await client.get("/v1/tools/notifications", params={"unread": "maybe"}, headers=auth)
    assert first["count"] == 2 and [n["title"] for n in first["notifications"]] == ["n2", "n1"]
    # what is left unread: n0, and the grant's credit_issued from before it
    assert [n["title"] for n in rest["notifications"]][0] == "n0" and [n["type"] for n in rest["notifications"]] == [
        "job_completed",
        "credit_issued",
    ]
    assert everything["count"] == 4 and all(n["read"] for n in everything["notifications"])
    assert set(everything["notifications"][0]) == {
        "id",
        "agentId",
        "type",
        "title",
        "body",
        "metadata",
        "read",
        "createdAt",
    }
    assert bad.status_code == 400


def test_the_acceptance_status_is_declared_by_the_tool():
    """`pending` unless the tool declares another acceptance status (processing, queued, accepted, active)."""
    import dataclasses

    from tests.support.jobs_plugin import JobsPlugin as _Plugin

    declared: list = []
    _Plugin().register_tools(declared.append)
    tool = declared[0]
    assert tool.accepted_status == "pending"
    assert dataclasses.replace(tool, accepted_status="processing").accepted_status == "processing"
    with pytest.raises(ValueError, match="accepted_status"):
        dataclasses.replace(tool, accepted_status="running")


async def test_a_provider_auth_failure_has_one_status_inline_and_on_the_job(kernel):
    """Our credentials refused by a provider: the same status whether the call answered inline or as a failed job."""
    from tollway._core.plugin_api.upstream import Reply, Upstream

    demo = Upstream(
        family="demo", name="demo", label="Demo", default_base_url="https://demo.invalid", description="a demo registry"
    )
    inline = demo.refusal(Reply(401, {}, b"", 0))
    await jobs.create(job_id="req_auth", tool="add_numbers", agent_id="a", input_json="{}", receipt_id=None)
    assert await jobs.fail("req_auth", None, code="provider_auth", message="Demo refused the request's credentials.")
    job = jobs.resource(await jobs.get("req_auth"))
    assert (job.error_code, job.error_status) == (inline.code, inline.status) == ("provider_auth", 503)
