"""Idempotency-Key through the paid pipeline (SQLite and PostgreSQL): replays,
422 on a different body, 409 while running, errors replayed once execution
began, x402 and write-proof retries, and 30 concurrent retries of one key."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from eth_account import Account

from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.credits.tables import LedgerEntry
from tollway._core.jobs.tables import Job
from tollway._core.receipts.tables import Receipt
from tollway._runtime.worker import Worker
from tollway.testing import credits_session, http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin()), ("jobs", JobsPlugin())])


async def token_with_credits(client, amount="1"):
    return (await credits_session(client, amount))[1]


def strip_rate(headers) -> dict:
    return {
        k.lower(): v
        for k, v in headers.items()
        if not k.lower().startswith("ratelimit") and k.lower() not in ("content-length", "date")
    }


async def test_same_key_same_body_replays_and_charges_once(kernel):
    async with http_client(kernel) as client:
        auth = await token_with_credits(client)
        headers = {**auth, "Idempotency-Key": "order-1"}
        first = await client.post("/v1/tools/test/echo-keyed", json={"text": "hello"}, headers=headers)
        again = await client.post("/v1/tools/test/echo-keyed", json={"text": "hello"}, headers=headers)
        other = await client.post("/v1/tools/test/echo-keyed", json={"text": "bye"}, headers=headers)
        unkeyed = await client.post("/v1/tools/test/echo-keyed", json={"text": "hello"}, headers=auth)
        bad_key = await client.post(
            "/v1/tools/test/echo-keyed", json={"text": "hello"}, headers={**auth, "Idempotency-Key": "x" * 300}
        )
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert first.status_code == 200 and again.status_code == 200
    assert again.json() == first.json()
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused"
    assert unkeyed.status_code == 200 and unkeyed.json()["data"]["request_id"] != first.json()["data"]["request_id"]
    assert bad_key.status_code == 400 and bad_key.json()["details"][0]["field"] == "Idempotency-Key"
    assert balance["credits_balance"] == "0.994000"  # two executions: the keyed one and the unkeyed one


async def test_errors_after_execution_began_are_replayed(kernel):
    async with http_client(kernel) as client:
        auth = await token_with_credits(client)
        headers = {**auth, "Idempotency-Key": "boom-1"}
        runs = len(echo_plugin.RUNS)
        first = await client.post("/v1/tools/test/echo-keyed", json={"text": "boom"}, headers=headers)
        again = await client.post("/v1/tools/test/echo-keyed", json={"text": "boom"}, headers=headers)
    assert first.status_code == 503 and again.status_code == 503
    assert again.json() == first.json()
    assert len(echo_plugin.RUNS) - runs == 1


async def test_a_quote_is_not_remembered_so_the_paid_retry_runs(kernel):
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        quote = await client.post(
            "/v1/tools/test/echo-keyed", json={"text": "pay"}, headers={"Idempotency-Key": "k-402"}
        )
        payment = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        paid_headers = {
            "Idempotency-Key": "k-402",
            "payment-signature": payment,
            "X-Quote-ID": quote.json()["quote_id"],
        }
        paid = await client.post("/v1/tools/test/echo-keyed", json={"text": "pay"}, headers=paid_headers)
        retry = await client.post("/v1/tools/test/echo-keyed", json={"text": "pay"}, headers=paid_headers)
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    assert quote.status_code == 402
    assert paid.status_code == 200, paid.text
    assert retry.status_code == 200 and retry.json() == paid.json()  # replayed, not refused as a reused nonce
    assert retry.headers["PAYMENT-RESPONSE"] == paid.headers["PAYMENT-RESPONSE"]
    assert balance["on_chain_balance"] == "0.997000"


async def test_a_write_proof_may_be_repeated_by_an_idempotent_retry(kernel):
    wallet = Account.create()
    async with http_client(kernel) as client:
        await client.post(
            "/v1/tools/internal/agents/register", json={"wallet_address": wallet.address}, headers=OPERATOR
        )
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": wallet.address, "amount": "1"}, headers=OPERATOR
        )
        body = json.dumps({"text": "proof"}).encode()
        proof = make_agent_proof(
            wallet,
            chain_id=84532,
            scope="write",
            method="POST",
            path="/v1/tools/test/echo-keyed",
            body=body,
            now=int(time.time()),
        )
        headers = {
            "X-Agent-ID": wallet.address,
            "X-Agent-Proof": proof,
            "Idempotency-Key": "p-1",
            "content-type": "application/json",
        }
        first = await client.post("/v1/tools/test/echo-keyed", content=body, headers=headers)
        retry = await client.post("/v1/tools/test/echo-keyed", content=body, headers=headers)
        no_key = {k: v for k, v in headers.items() if k != "Idempotency-Key"}
        reused = await client.post("/v1/tools/test/echo-keyed", content=body, headers=no_key)
    assert first.status_code == 200 and retry.json() == first.json()
    assert reused.status_code == 401 and reused.json()["details"]["reason"] == "nonce_reused"


async def test_required_key_is_refused_before_payment_when_missing(kernel):
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/test/add-keyed", json={"a": 1})
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_request" and resp.json()["details"][0]["field"] == "Idempotency-Key"
    assert "PAYMENT-REQUIRED" not in resp.headers


async def test_thirty_concurrent_retries_of_one_key_execute_once(kernel_factory, tmp_path):
    # the retries poll through 409s faster than the paid category's 60/min allows
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())], env={"TOLLWAY_RATE_LIMIT_PAID": "100000/60"})
    gate = tmp_path / "gate"
    body = {"a": 3, "b": 4, "gate": str(gate)}
    async with http_client(kernel) as client:
        auth = await token_with_credits(client)
        headers = {**auth, "Idempotency-Key": "solve-7"}

        async def retry_until_answered():
            for _ in range(200):
                resp = await client.post("/v1/tools/test/add-keyed", json=body, headers=headers)
                if resp.status_code != 409:
                    return resp
                assert resp.json()["error"] == "idempotency_in_progress" and resp.headers["Retry-After"]
                await asyncio.sleep(0.01)
            raise AssertionError("never answered")

        answers = await asyncio.gather(*[retry_until_answered() for _ in range(30)])
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            gate.write_text("open")
            for _ in range(400):
                status = (await client.get(f"/v1/requests/{answers[0].json()['request_id']}", headers=auth)).json()[
                    "status"
                ]
                if status == "completed":
                    break
                await asyncio.sleep(0.025)
        finally:
            await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert {a.status_code for a in answers} == {202}
    assert len({json.dumps(a.json(), sort_keys=True) for a in answers}) == 1
    assert len({json.dumps(strip_rate(a.headers), sort_keys=True) for a in answers}) == 1
    assert status == "completed"
    assert await Job.count() == 1
    assert await Receipt.count() == 1
    assert await LedgerEntry.count().where(LedgerEntry.kind == "spend") == 1
    assert balance["credits_balance"] == "0.998000"
