"""Late settlements and the reconciler, against a real facilitator over real HTTP.

A facilitator that settles after the kernel's timeout (`settle_mode = "hang"`,
then `release()`) is the fault injected here: the USDC moves although the
kernel stopped waiting. Nothing may then be lost or paid twice: the top-up is
answered `pending` (never a fresh 402), a retry of the same payment gets the
same record, and the reconciler completes it from the chain's answer (the
facilitator's JSON-RPC stand-in) or keeps it visibly pending when it cannot
know. Every test ends with the ledger check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from eth_account import Account

from tests.support.echo_plugin import EchoPlugin
from tests.support.facilitator_server import running_facilitator
from tests.support.installed import with_test_plugins
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import CreditTopUp, LedgerEntry, TopUpAttempt
from tollway._core.messages.tables import Notification
from tollway._core.payments.tables import PaymentAuthorization
from tollway.testing import http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}
TIMEOUT_S = 1.0  # long enough for a loaded machine to answer /verify, short enough to trip on a hanging settle


@pytest.fixture
async def facilitator():
    async with running_facilitator("base-sepolia") as fac:
        yield fac


async def make_kernel(kernel_factory, facilitator, *, chain: bool = True, timeout_s: float = TIMEOUT_S):
    env = {
        "TOLLWAY_NETWORK": "base-sepolia",
        "TOLLWAY_FACILITATOR_URL": facilitator.url,
        "TOLLWAY_FACILITATOR_TIMEOUT_S": str(timeout_s),
    }
    if chain:
        env["TOLLWAY_CHAIN_RPC_URL"] = facilitator.url + "/rpc"
    return await kernel_factory(plugins=[("echo", EchoPlugin())], env=env)


async def signed_top_up(client, payer, amount="2.5") -> dict[str, str]:
    quote = await client.post("/v1/credits/top-up", json={"amount": amount}, headers={"X-Agent-ID": payer.address})
    assert quote.status_code == 402
    header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia")
    return {"X-Agent-ID": payer.address, "payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}


async def landed_late_top_up(client, facilitator, amount: str) -> dict[str, str]:
    """A top-up answered 202 pending whose settlement then landed on chain; its payment headers."""
    payer = Account.create()
    facilitator.fund(payer.address, 10_000_000)
    facilitator.settle_mode = "hang"
    headers = await signed_top_up(client, payer, amount)
    assert (await client.post("/v1/credits/top-up", json={"amount": amount}, headers=headers)).status_code == 202
    facilitator.release()
    await wait_until(lambda: len(facilitator.transactions) == 1)
    return headers


async def wait_until(predicate, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_late_top_up_is_pending_then_credited_once(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator)
    payer = Account.create()
    facilitator.fund(payer.address, 10_000_000)
    facilitator.settle_mode = "hang"
    async with http_client(kernel) as client:
        headers = await signed_top_up(client, payer)
        first = await client.post("/v1/credits/top-up", json={"amount": 2.5}, headers=headers)
        assert first.status_code == 202, first.text  # never a fresh 402 for money that may have moved
        record = first.json()
        assert record["status"] == "pending" and record["amount"] == "2.500000" and record["topped_up"] == "0.000000"
        assert record["already_credited"] is False and record["settlement_tx"] is None
        assert "PAYMENT-REQUIRED" not in first.headers

        again = await client.post("/v1/credits/top-up", json={"amount": 2.5}, headers=headers)
        assert again.status_code == 202 and again.json() == record
        other_amount = await client.post("/v1/credits/top-up", json={"amount": 3}, headers=headers)
        assert other_amount.status_code == 422 and other_amount.json()["error"] == "idempotency_key_reused"

        facilitator.release()  # the hanging settlement lands on chain after the kernel gave up
        await wait_until(lambda: len(facilitator.transactions) == 1)
        pending = (await client.get("/v1/tools/internal/pending", headers=OPERATOR)).json()
        assert [(p["kind"], p["state"]) for p in pending["pending"]] == [("top_up", "pending")]

        done = await kernel.reconciler.run_once(grace_s=0)
        assert done["payments_settled"] == 1
        credited = await client.post("/v1/credits/top-up", json={"amount": 2.5}, headers=headers)
        assert credited.status_code == 200, credited.text
        body = credited.json()
        assert body["status"] == "credited" and body["already_credited"] is True and body["topped_up"] == "2.500000"
        assert body["settlement_tx"] == facilitator.transactions[0]["transaction"]
        assert (await kernel.reconciler.run_once(grace_s=0))["payments_settled"] == 0  # once only
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
        notes = await Notification.select().where(Notification.type == "credit_issued")
        receipts = (await client.get("/v1/analytics/receipts", headers={"X-Agent-ID": payer.address})).json()
        after = (await client.get("/v1/tools/internal/pending", headers=OPERATOR)).json()
    assert balance["credits_balance"] == "2.500000"
    assert facilitator.balance(payer.address) == 7_500_000  # paid once
    assert len(notes) == 1
    (receipt,) = receipts["receipts"]
    assert receipt["settlement_tx"] == body["settlement_tx"] and receipt["job_id"] == receipt["request_id"]
    assert after["count"] == 0
    assert await LedgerEntry.count().where(LedgerEntry.kind == "top_up") == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_without_a_chain_reader_an_unknown_fate_stays_pending_and_visible(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator, chain=False)
    async with http_client(kernel) as client:
        headers = await landed_late_top_up(client, facilitator, "1")
        facilitator.settle_mode = "ok"
        done = await kernel.reconciler.run_once(grace_s=0)
        report = (await client.get("/v1/tools/internal/pending", headers=OPERATOR)).json()
        retry = await client.post("/v1/credits/top-up", json={"amount": 1}, headers=headers)
        refused = await client.get("/v1/tools/internal/pending")
    # The facilitator says the authorization is spent; only the chain can say by whom.
    assert done["payments_pending"] == 1 and done["payments_settled"] == 0
    (item,) = report["pending"]
    assert item["kind"] == "top_up" and item["state"] == "pending" and "TOLLWAY_CHAIN_RPC_URL" in item["reason"]
    assert retry.status_code == 202 and retry.json()["status"] == "pending"
    assert refused.status_code == 401
    assert await CreditTopUp.count() == 0


async def test_a_late_settlement_that_fails_releases_the_top_up(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator)
    payer = Account.create()
    facilitator.fund(payer.address, 10_000_000)
    facilitator.settle_mode = "hang"
    async with http_client(kernel) as client:
        headers = await signed_top_up(client, payer, "1")
        assert (await client.post("/v1/credits/top-up", json={"amount": 1}, headers=headers)).status_code == 202
        facilitator.settle_mode = "fail"  # the hanging settlement ends without a transfer, and so does every retry
        facilitator.release()
        await asyncio.sleep(0.1)
        done = await kernel.reconciler.run_once(grace_s=0)
        retry = await client.post("/v1/credits/top-up", json={"amount": 1}, headers=headers)
    assert done["payments_failed"] == 1
    assert (
        retry.status_code == 402 and retry.json()["error"] == "payment_verification_failed"
    )  # nothing moved, nothing credited
    assert (await TopUpAttempt.select().first())["status"] == "failed"
    assert (await PaymentAuthorization.select().first())["status"] == "failed"
    assert facilitator.balance(payer.address) == 10_000_000
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_late_settled_call_receipt_is_re_signed_settled(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator)
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    facilitator.settle_mode = "hang"
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/test/echo", json={"text": "late"})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia")
        paid = await client.post("/v1/tools/test/echo", json={"text": "late"}, headers={"payment-signature": header})
        assert paid.status_code == 200
        receipt_id = paid.json()["data"]["receipt_id"]
        assert (await kernel.receipts.get(receipt_id))["status"] == "pending"
        facilitator.release()
        await wait_until(lambda: len(facilitator.transactions) == 1)
        assert (await kernel.reconciler.run_once(grace_s=0))["payments_settled"] == 1
    receipt = await kernel.receipts.get(receipt_id)
    assert receipt["status"] == "settled" and receipt["revision"] == 2
    assert receipt["settlement_tx"] == facilitator.transactions[0]["transaction"] and receipt["settled_at"]
    assert await check_ledger(max_intermediate_age_s=0) == []


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_concurrent_retries_of_one_top_up_never_answer_402(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator, timeout_s=10)
    payer = Account.create()
    facilitator.fund(payer.address, 10_000_000)
    facilitator.settle_mode = "hang"
    async with http_client(kernel) as client:
        headers = await signed_top_up(client, payer, "2")

        async def post():
            return await client.post("/v1/credits/top-up", json={"amount": 2}, headers=headers)

        first = asyncio.create_task(post())
        await wait_until(lambda: facilitator.calls("settle") == 1)
        during = await asyncio.gather(*(post() for _ in range(8)))  # while the first is being settled
        facilitator.release()
        first_answer = await first
        after = await asyncio.gather(*(post() for _ in range(8)))
    assert [r.status_code for r in during] == [409] * 8
    assert all(r.json()["error"] == "top_up_in_progress" and r.headers["Retry-After"] for r in during)
    assert first_answer.status_code == 200 and first_answer.json()["already_credited"] is False
    assert [r.status_code for r in after] == [200] * 8
    assert all(
        r.json()["already_credited"] is True and r.json()["transaction_id"] == first_answer.json()["transaction_id"]
        for r in after
    )
    assert await LedgerEntry.count().where(LedgerEntry.kind == "top_up") == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_retries_racing_the_reconciler_credit_once(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator)
    async with http_client(kernel) as client:
        headers = await landed_late_top_up(client, facilitator, "4")
        results = await asyncio.gather(
            *(client.post("/v1/credits/top-up", json={"amount": 4}, headers=headers) for _ in range(8)),
            kernel.reconciler.run_once(grace_s=0),
            kernel.reconciler.run_once(grace_s=0),
        )
        final = await client.post("/v1/credits/top-up", json={"amount": 4}, headers=headers)
    answers, passes = results[:8], results[8:]
    assert {r.status_code for r in answers} <= {200, 202, 409}
    assert sum(p["payments_settled"] for p in passes) <= 1
    assert final.status_code == 200 and final.json()["topped_up"] == "4.000000"
    assert await LedgerEntry.count().where(LedgerEntry.kind == "top_up") == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_call_whose_process_died_while_settling_is_refunded_once_settled(kernel_factory, facilitator):
    kernel = await make_kernel(kernel_factory, facilitator, timeout_s=10)
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    facilitator.settle_mode = "hang"
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/test/echo", json={"text": "lost"})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia")
        call = asyncio.create_task(
            client.post("/v1/tools/test/echo", json={"text": "lost"}, headers={"payment-signature": header})
        )
        await wait_until(lambda: facilitator.calls("settle") == 1)
        call.cancel()  # the request dies while the facilitator holds the payment (its answer is lost)
        with pytest.raises(asyncio.CancelledError):
            await call
        assert (await PaymentAuthorization.select().first())["status"] == "settling"
        facilitator.release()
        await wait_until(lambda: len(facilitator.transactions) == 1)
        assert (await kernel.reconciler.run_once(grace_s=0))["payments_settled"] == 1
        assert (await kernel.reconciler.run_once(grace_s=0))["payments_settled"] == 0
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
        receipts = (await client.get("/v1/analytics/receipts", headers={"X-Agent-ID": payer.address})).json()
    # the USDC moved and no answer reached the payer: it comes back as credits, with a receipt
    assert balance["credits_balance"] == "0.001000"
    (receipt,) = receipts["receipts"]
    assert receipt["status"] == "refunded" and receipt["refund_reason"] == "interrupted"
    assert receipt["settlement_tx"] == facilitator.transactions[0]["transaction"]
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_reservation_never_sent_for_settlement_is_voided(kernel_factory, facilitator):
    from tollway._core.payments.gateway import find_payment_header

    kernel = await make_kernel(kernel_factory, facilitator, timeout_s=10)  # nothing hangs here
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/test/echo", json={"text": "never"})
    header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia")
    call = kernel.paid_calls.prepare(kernel.tools["echo_words"], b'{"text": "never"}')
    # the process dies after reserving, before the tool finished: nothing was sent to settle
    await kernel.gateway.accept(
        find_payment_header({"payment-signature": header}), None, purpose="echo_words", input_hash=call.input_hash
    )
    assert (await kernel.reconciler.run_once())["payments_voided"] == 0  # still within its grace period
    assert (await kernel.reconciler.run_once(grace_s=0))["payments_voided"] == 1
    assert (await PaymentAuthorization.select().first())["status"] == "voided"
    assert facilitator.calls("settle") == 0 and facilitator.balance(payer.address) == 1_000_000
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_the_ledger_check_finds_a_debit_without_receipt(kernel_factory):
    from tollway._core.credits import ledger

    kernel = await kernel_factory()
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1"}, headers=OPERATOR
        )
    assert await check_ledger(max_intermediate_age_s=0) == []
    async with kernel.db.transaction():
        await ledger.debit_credits(agent["agent_id"], 5_000, kind="spend", reference="req_orphan")
    problems = await check_ledger(max_intermediate_age_s=0)
    assert problems == ["request req_orphan was debited but has no receipt and no live hold"]


@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_tollway_reconcile_resolves_and_checks_from_the_command_line(kernel_factory):
    import os
    import subprocess
    import sys

    from tollway._core.credits import holds

    kernel = await kernel_factory()
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1"}, headers=OPERATOR
        )
    # what a process killed mid-call leaves behind
    assert await holds.take(
        kernel.db,
        request_id="req_killed",
        agent_id=agent["agent_id"],
        amount=5_000,
        tool="lookup_word",
        receipt_id="rcpt_killed",
        memo=None,
        decision_context=None,
    )
    env = {
        **os.environ,
        "TOLLWAY_HOME": kernel.config.home,
        "TOLLWAY_DATABASE_URL": kernel.db.url,
        "TOLLWAY_OFFLINE": "1",
        "TOLLWAY_RECEIPT_KEY": kernel.config.plugin_env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
    }
    env = with_test_plugins(env, Path(kernel.config.home))  # the held call was to the test lookup tool
    cli = [os.path.join(os.path.dirname(sys.executable), "tollway"), "reconcile", "--grace", "0", "--check"]
    done = await asyncio.to_thread(subprocess.run, cli, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import json

    report = json.loads(done.stdout)
    assert report["reconciled"]["holds_refunded"] == 1 and report["count"] == 0 and report["ledger_problems"] == []
    receipt = await kernel.receipts.get("rcpt_killed")
    assert receipt["status"] == "refunded" and receipt["tool"] == "lookup_word" and receipt["job_id"] == "req_killed"
