"""commerce_buy once `complete` was sent, on SQLite and PostgreSQL, against the stand-in ACP
merchant's fault switches: the merchant may have charged the token whatever we heard, so an
unknown outcome never refunds. The job parks (`Parked(retry_after_s)`: it stays `processing`)
and asks again with the same Idempotency-Key and body, then reads the session: completed ->
the total and the fee kept, the rest returned, one order, one receipt; canceled -> refunded;
never answering -> held for the operator (`outcome_unknown`), neither refunded nor kept. A
failure recording a completed order, or a run killed after complete, is finished by a later
run without a second session, token or charge."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from buyer_support import balance, buy_body, commerce_kernel, configure, validate_exchanges

from tollway.testing import (
    OPERATOR,
    count_receipts,
    credits_session,
    http_client,
    ledger_problems,
    wait_for_job,
    worker_for,
)
from tollway_commerce.buyer import buy_tool
from tollway_commerce.buyer.tables import Order

FAST = {
    "TOLLWAY_COMMERCE_BUY_RECHECK_S": "0.05",
    "TOLLWAY_COMMERCE_BUY_RECHECK_MAX_S": "0.2",
}
# the first wait long enough for a test to see the job parked (and change the merchant meanwhile)
SEEN = {**FAST, "TOLLWAY_COMMERCE_BUY_RECHECK_S": "1.5"}
HELD_ENV = {**FAST, "TOLLWAY_COMMERCE_BUY_OUTCOME_WAIT_S": "0.5"}  # asked for half a second, then held
KEPT = "50.780000"  # 100 - (60 + 0.25) + 11.03: the total (48.97) and the fee kept
CHARGED = "39.750000"  # 100 - (60 + 0.25): charged up front, nothing returned or refunded yet


def _completes(merchant) -> int:
    return sum(1 for method, path in merchant.requests if method == "POST" and path.endswith("/complete"))


def _one_purchase_at_the_merchant(merchant) -> None:
    """One session, one token (minted once: no replay either), one charge of the total."""
    assert merchant.requests.count(("POST", "/checkout_sessions")) == 1
    assert len(merchant.token_requests) == 1 and len(merchant.tokens) == 1
    assert [amount for _, amount, _ in merchant.charges] == [4897]


async def _accept(client, auth):
    accepted = await client.post(
        "/v1/tools/commerce/buy", json=buy_body(("tee-red-m", 2), max_total="60"), headers=auth
    )
    assert accepted.status_code == 202, accepted.text
    return accepted.json()["request_id"]


async def _parked(client, request_id, auth) -> dict:
    """The job once it parked: still `processing`, saying the merchant has not said."""
    for _ in range(500):
        job = (await client.get(f"/v1/requests/{request_id}", headers=auth)).json()
        if job["status"] in ("completed", "failed") or (job.get("message") or "").startswith(
            "paying: the merchant has"
        ):
            break
        await asyncio.sleep(0.01)
    assert job["status"] == "processing", job
    assert job["message"].startswith("paying: the merchant has not said whether it took the payment"), job
    return job


async def _until_done(client, request_id, auth):
    return await wait_for_job(client, request_id, auth, every_s=0.05)


@contextlib.asynccontextmanager
async def _worker(kernel):
    worker = worker_for(kernel)
    worker.start()
    try:
        yield worker
    finally:
        await worker.stop()


async def _settled(client, auth, job, receipts_before: int) -> None:
    assert job["status"] == "completed", job
    assert job["result"]["result"]["spent_usdc"] == "48.970000"
    assert job["result"]["result"]["returned_usdc"] == "11.030000"
    assert await balance(client, auth) == KEPT
    receipt = (await client.get(f"/v1/receipts/{job['receipt_id']}", headers=auth)).json()
    assert receipt["category"] == "commerce" and receipt["returned_usdc"] == "11.030000"
    assert await count_receipts() == receipts_before + 1
    orders = await Order.select().run()
    assert len(orders) == 1 and orders[0]["state"] == "completed" and orders[0]["payment_token"] is None


async def test_a_lost_answer_to_complete_parks_the_job_and_a_later_ask_settles_it(kernel_factory, merchant):
    """The merchant completes (charges) but its answer is lost and it is down for the read-back:
    the job parks, charged and not refunded; the next run repeats complete (same key and body:
    the merchant answers its first answer) and settles."""
    kernel = await commerce_kernel(kernel_factory, merchant, **SEEN)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        merchant.drop_complete_answer, merchant.down_after_complete = 1, 1
        request_id = await _accept(client, auth)
        await _parked(client, request_id, auth)
        assert (await Order.select(Order.state).where(Order.id == request_id).first())["state"] == "completing"
        assert await balance(client, auth) == CHARGED and len(merchant.charges) == 1
        job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    _one_purchase_at_the_merchant(merchant)
    assert _completes(merchant) == 2  # the first, and the same request again, answered from its key
    assert validate_exchanges(merchant) >= 3  # replays are not kept as exchanges
    assert await ledger_problems() == []


async def test_a_merchant_down_after_complete_for_a_while_is_asked_until_it_answers(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant, **FAST)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        # the answer lost, then 503 to the read-back and to the next run's complete and read-back,
        # and to the third run's complete; its read-back finds the session completed
        merchant.drop_complete_answer, merchant.down_after_complete = 1, 4
        request_id = await _accept(client, auth)
        job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    _one_purchase_at_the_merchant(merchant)
    assert _completes(merchant) == 3  # three runs
    assert await ledger_problems() == []


async def test_a_5xx_after_charging_is_read_back_and_kept(kernel_factory, merchant):
    """The merchant charges and answers 500, which it does not keep against the key (rfc §6.5): the
    read-back finds the session completed, in the same run."""
    kernel = await commerce_kernel(kernel_factory, merchant, **FAST)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        merchant.fail_after_complete = 1
        request_id = await _accept(client, auth)
        job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    _one_purchase_at_the_merchant(merchant)
    assert _completes(merchant) == 1
    assert await ledger_problems() == []


async def test_a_refusal_of_a_repeated_complete_is_not_taken_for_a_refusal_of_the_payment(kernel_factory, merchant):
    """500 after charging, and the read-back fails: parked. The next run's complete is a fresh
    request (a 5xx is not kept against the key), which the merchant refuses 400 since the session
    is completed; that refusal is not the payment's outcome: the session's `completed` is, and the
    order is kept, never refunded."""
    kernel = await commerce_kernel(kernel_factory, merchant, **SEEN)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        merchant.fail_after_complete, merchant.down_after_complete = 1, 1
        request_id = await _accept(client, auth)
        await _parked(client, request_id, auth)
        job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    assert [e.status for e in merchant.exchanges if e.path.endswith("/complete")] == [500, 400]
    _one_purchase_at_the_merchant(merchant)
    assert await ledger_problems() == []


async def test_a_complete_lost_on_its_way_is_sent_again_and_completes_once(kernel_factory, merchant):
    """The complete request never reached the merchant; the read-back shows the session still
    ready for payment: the outcome is unknown (it may still arrive), so the job parks; the next
    run sends the same complete, which the merchant now does, once."""
    kernel = await commerce_kernel(kernel_factory, merchant, **SEEN)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        merchant.lose_complete = 1
        request_id = await _accept(client, auth)
        await _parked(client, request_id, auth)
        assert merchant.charges == []
        job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    _one_purchase_at_the_merchant(merchant)
    assert await ledger_problems() == []


async def test_a_session_the_merchant_canceled_meanwhile_is_refunded(kernel_factory, merchant):
    """complete was lost on its way and the merchant let the session expire (canceled) before the
    job asked again: a definite not-completed, so the job fails `checkout_failed`, refunded in full."""
    kernel = await commerce_kernel(kernel_factory, merchant, **SEEN)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        merchant.lose_complete = 1
        request_id = await _accept(client, auth)
        await _parked(client, request_id, auth)
        assert await balance(client, auth) == CHARGED
        (session,) = merchant.sessions.values()
        session["status"] = "canceled"  # the merchant's session expired
        job = await _until_done(client, request_id, auth)
        assert job["status"] == "failed" and job["error_code"] == "checkout_failed", job
        assert "the session is canceled" in job["error"]
        assert await balance(client, auth) == "100.000000"
        receipt = (await client.get(f"/v1/receipts/{job['receipt_id']}", headers=auth)).json()
        assert receipt["status"] == "refunded"
        order = await Order.select().where(Order.id == request_id).first()
        assert order["state"] == "failed" and order["payment_token"] is None
    assert merchant.charges == [] and len(merchant.token_requests) == 1
    assert await ledger_problems() == []


@contextlib.asynccontextmanager
async def _held(kernel_factory, merchant):
    """A purchase whose merchant charged, then never answered again: held for the operator.
    Yields (client, auth, receipts before it, its request id)."""
    kernel = await commerce_kernel(kernel_factory, merchant, **HELD_ENV)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        merchant.drop_complete_answer, merchant.down_after_complete = 1, 1_000_000
        request_id = await _accept(client, auth)
        await _until_held(kernel, merchant, request_id)
        yield client, auth, receipts, request_id


async def _until_held(kernel, merchant, request_id) -> None:
    async with _worker(kernel):
        for _ in range(200):
            order = await Order.select().where(Order.id == request_id).first()
            if order["state"] == "outcome_unknown":
                break
            await asyncio.sleep(0.05)
        assert order["state"] == "outcome_unknown", order
        assert "its session could not be read" in order["error"]
        asked = _completes(merchant)
        await asyncio.sleep(0.6)  # held: no worker claims the job again, nobody asks any more
        assert _completes(merchant) == asked and asked >= 2


async def test_a_merchant_that_never_answers_leaves_the_order_held_for_the_operator(kernel_factory, merchant):
    """Past TOLLWAY_COMMERCE_BUY_OUTCOME_WAIT_S the job stops asking: the order is `outcome_unknown`,
    the job stays `processing` saying so, and the agent's payment is neither refunded nor kept. The
    operator's `resolve` asks the merchant again: still down, nothing changes; back, the order is
    settled and the job completed."""
    async with _held(kernel_factory, merchant) as (client, auth, receipts, request_id):
        job = (await client.get(f"/v1/requests/{request_id}", headers=auth)).json()
        assert job["status"] == "processing" and "held for the operator" in job["message"], job
        assert await balance(client, auth) == CHARGED
        receipt = (await client.get(f"/v1/receipts/{job['receipt_id']}", headers=auth)).json()
        assert receipt["status"] == "settled" and receipt.get("returned_usdc") in (None, "0.000000"), receipt

        path = f"/v1/tools/internal/commerce/orders/{request_id}/resolve"
        assert (await client.post(path, json={}, headers=auth)).status_code == 401  # the operator's only
        still = await client.post(path, json={}, headers=OPERATOR)
        assert still.status_code == 200, still.text
        assert still.json()["state"] == "outcome_unknown" and still.json()["job_status"] == "processing"
        assert "could not be read" in still.json()["heard"]
        merchant.down = 0  # back
        ended = await client.post(path, json={"outcome": "ask"}, headers=OPERATOR)
        assert ended.json() == {"order_id": request_id, "state": "completed", "job_status": "completed"}, ended.text
        job = (await client.get(f"/v1/requests/{request_id}", headers=auth)).json()
        await _settled(client, auth, job, receipts)
        again = await client.post(path, json={}, headers=OPERATOR)
        assert again.status_code == 409, again.text  # ended once
    _one_purchase_at_the_merchant(merchant)
    assert await ledger_problems() == []


@pytest.mark.parametrize("outcome", ["completed", "not_completed"])
async def test_the_operator_ends_a_held_order_by_what_the_merchant_told_them(kernel_factory, merchant, outcome):
    async with _held(kernel_factory, merchant) as (client, auth, receipts, request_id):
        told = {"outcome": outcome, "merchant_order_id": "ord_by_email"}
        ended = await client.post(
            f"/v1/tools/internal/commerce/orders/{request_id}/resolve", json=told, headers=OPERATOR
        )
        assert ended.status_code == 200, ended.text
        job = (await client.get(f"/v1/requests/{request_id}", headers=auth)).json()
        if outcome == "completed":
            await _settled(client, auth, job, receipts)
            assert job["result"]["result"]["merchant_order_id"] == "ord_by_email"
        else:
            assert job["status"] == "failed" and job["error_code"] == "checkout_failed", job
            assert await balance(client, auth) == "100.000000"
            order = await Order.select().where(Order.id == request_id).first()
            assert order["state"] == "failed" and order["payment_token"] is None
    assert await ledger_problems() == []


async def test_a_failure_recording_the_completed_order_parks_and_the_next_run_keeps_it(
    kernel_factory, merchant, monkeypatch
):
    """The merchant completed and our transaction recording the order fails (raised inside it, after
    the unspent part was returned: the whole transaction rolls back). That used to fail the job
    `internal_error` and refund a purchase the merchant charged; now the job parks and the next run
    asks again (answered from the key) and records it: one charge, one return, one receipt."""
    kernel = await commerce_kernel(kernel_factory, merchant, **SEEN)
    platform = type(kernel.platform)
    real = platform.return_unspent
    calls = []

    async def fails_once(self, receipt_id, amount, *, reason):
        answer = await real(self, receipt_id, amount, reason=reason)
        calls.append(amount)
        if len(calls) == 1:
            raise RuntimeError("the database went away mid-transaction")
        return answer

    monkeypatch.setattr(platform, "return_unspent", fails_once)
    async with http_client(kernel) as client, _worker(kernel):
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        request_id = await _accept(client, auth)
        await _parked(client, request_id, auth)
        assert await balance(client, auth) == CHARGED  # rolled back: nothing returned, nothing refunded
        assert (await Order.select(Order.state).where(Order.id == request_id).first())["state"] == "completing"
        job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    assert calls == [11_030_000, 11_030_000]
    _one_purchase_at_the_merchant(merchant)
    assert await ledger_problems() == []


@pytest.mark.parametrize("where", ["before complete is sent", "after the merchant answered"])
async def test_a_run_killed_while_completing_is_rerun_asking_never_buying_again(
    kernel_factory, merchant, monkeypatch, where
):
    """The run dies (a kill: nothing of it runs after) once the order is `completing`, before or after
    the merchant's answer; the job's next run goes straight to asking: complete with the same key,
    no new session, no new token; one charge."""
    import msgspec

    from tollway_commerce.buyer.wire import CommerceBuyInput

    class Killed(BaseException):
        pass

    async def dies(*args, **kwargs):
        raise Killed(where)

    before = where == "before complete is sent"
    kernel = await commerce_kernel(kernel_factory, merchant, **FAST)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        agent_id, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        request_id = await _accept(client, auth)
        with monkeypatch.context() as patched:
            patched.setattr(buy_tool, "settle" if before else "record", dies)
            tool = kernel.tools["commerce_buy"]
            ctx = kernel.tool_runner.contexts.for_run(tool, request_id, agent_id)
            with pytest.raises(Killed):
                await tool.run(msgspec.convert(buy_body(("tee-red-m", 2), max_total="60"), CommerceBuyInput), ctx)
        assert (await Order.select(Order.state).where(Order.id == request_id).first())["state"] == "completing"
        assert len(merchant.charges) == (0 if before else 1)
        async with _worker(kernel):
            job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    _one_purchase_at_the_merchant(merchant)
    assert _completes(merchant) == (1 if before else 2)
    validate_exchanges(merchant)
    assert await ledger_problems() == []


async def test_a_run_killed_after_the_token_was_minted_asks_for_the_same_token_again(
    kernel_factory, merchant, monkeypatch
):
    """The run dies after the PSP minted the token and before `completing` was kept (complete never
    sent). The next run replays each step under its key: the same session, and the token asked for
    with identical parameters (its expiry was kept before the first ask), which the PSP answers with
    the first token instead of refusing a reused key; then it completes, charged once."""

    import msgspec
    from buyer_support import StandinIssuer

    from tollway_commerce.buyer.wire import CommerceBuyInput

    class Killed(BaseException):
        pass

    mint = StandinIssuer.issue_token

    async def minted_then_dies(self, **kwargs):
        await mint(self, **kwargs)
        raise Killed("after the token was minted")

    kernel = await commerce_kernel(kernel_factory, merchant, **FAST)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        agent_id, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        request_id = await _accept(client, auth)
        with monkeypatch.context() as patched:
            patched.setattr(StandinIssuer, "issue_token", minted_then_dies)
            tool = kernel.tools["commerce_buy"]
            ctx = kernel.tool_runner.contexts.for_run(tool, request_id, agent_id)
            with pytest.raises(Killed):
                await tool.run(msgspec.convert(buy_body(("tee-red-m", 2), max_total="60"), CommerceBuyInput), ctx)
        order = await Order.select().where(Order.id == request_id).first()
        assert order["state"] == "session_open" and order["token_expires_at"] is not None
        assert len(merchant.tokens) == 1 and merchant.charges == []
        await asyncio.sleep(1.1)  # a later second: a new expiry would be other parameters
        async with _worker(kernel):
            job = await _until_done(client, request_id, auth)
        await _settled(client, auth, job, receipts)
    assert len(merchant.sessions) == 1  # the create sent again under its key: answered with the first session
    assert len(merchant.token_requests) == 2 and merchant.token_requests[0] == merchant.token_requests[1]
    assert len(merchant.tokens) == 1 and [amount for _, amount, _ in merchant.charges] == [4897]
    validate_exchanges(merchant)
    assert await ledger_problems() == []
