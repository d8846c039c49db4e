"""POST /v1/credits/top-up as docs/payments.md describes it: 402 priced at `amount`,
payment-signature, settlement tx as idempotency key, already_credited on
resubmission, invalid_amount, payment_verification_failed, the
settled-but-not-credited recovery, and 503 for access-token sessions."""

from __future__ import annotations

import pytest
from eth_account import Account

from tollway._core.auth.tables import Agent
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import CreditTopUp, LedgerEntry, TopUpAttempt
from tollway.testing import decode_payment_required, http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory()


async def _fund(client, address, amount="5"):
    resp = await client.post(
        "/v1/tools/internal/chain/fund", json={"address": address, "amount": amount}, headers=OPERATOR
    )
    assert resp.status_code == 200


async def test_top_up_flow_and_idempotent_resubmission(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await _fund(client, payer.address)
        quote = await client.post(
            "/v1/credits/top-up", json={"amount": 2.5, "memo": "fuel"}, headers={"X-Agent-ID": payer.address}
        )
        assert quote.status_code == 402
        assert quote.json()["amount_usdc"] == "2.500000"
        assert decode_payment_required(quote.headers["PAYMENT-REQUIRED"])["accepts"][0]["amount"] == "2500000"
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        paid_headers = {
            "X-Agent-ID": payer.address,
            "payment-signature": header,
            "X-Quote-ID": quote.json()["quote_id"],
        }
        paid = await client.post("/v1/credits/top-up", json={"amount": 2.5, "memo": "fuel"}, headers=paid_headers)
        assert paid.status_code == 200, paid.text
        record = paid.json()
        assert record["topped_up"] == "2.500000" and record["credits_balance"] == "2.500000"
        assert record["settlement_tx"].startswith("0x") and record["transaction_id"]
        assert record["already_credited"] is False

        again = await client.post("/v1/credits/top-up", json={"amount": 2.5, "memo": "fuel"}, headers=paid_headers)
        assert again.status_code == 200, again.text
        assert again.json()["already_credited"] is True
        assert again.json()["transaction_id"] == record["transaction_id"]
        assert again.json()["settlement_tx"] == record["settlement_tx"]

        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
        receipts = (await client.get("/v1/analytics/receipts", headers={"X-Agent-ID": payer.address})).json()
        spend = (await client.get("/v1/analytics/spend/breakdown", headers={"X-Agent-ID": payer.address})).json()
    assert balance["credits_balance"] == "2.500000"
    assert balance["on_chain_balance"] == "2.500000"
    assert await CreditTopUp.count() == 1
    (receipt,) = receipts["receipts"]
    assert receipt["tool"] == "credits_top_up" and receipt["settlement_tx"] == record["settlement_tx"]
    assert receipt["amount_usdc"] == "2.500000" and receipt["memo"] == "fuel"
    assert spend["total"] == "0.000000" and spend["categories"] == []  # buying credits is not spending


async def test_top_up_sends_credit_issued_and_refuses_another_amount_for_the_same_payment(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await _fund(client, payer.address)
        quote = await client.post("/v1/credits/top-up", json={"amount": "1.5"}, headers={"X-Agent-ID": payer.address})
        headers = {"X-Agent-ID": payer.address, "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
        paid = await client.post("/v1/credits/top-up", json={"amount": "1.5"}, headers=headers)
        replayed = await client.post("/v1/credits/top-up", json={"amount": "2"}, headers=headers)
        notes = (await client.get("/v1/tools/notifications", headers={"X-Agent-ID": payer.address})).json()
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    assert paid.status_code == 200 and paid.json()["status"] == "credited"
    assert replayed.status_code == 422 and replayed.json()["error"] == "idempotency_key_reused"
    assert replayed.json()["details"] == {"paid_amount": "1.500000", "requested_amount": "2.000000"}
    (note,) = notes["notifications"]
    assert note["type"] == "credit_issued" and note["metadata"]["amount"] == "1.500000"
    assert note["metadata"]["settlement_tx"] == paid.json()["settlement_tx"]
    assert balance["credits_balance"] == "1.500000"  # the replay credited nothing


@pytest.mark.parametrize("amount", [0.001, 1000.01, "abc", None, True, 0, -1, "0.0000001"])
async def test_invalid_amounts(kernel, amount):
    async with http_client(kernel) as client:
        resp = await client.post(
            "/v1/credits/top-up", json={"amount": amount}, headers={"X-Agent-ID": Account.create().address}
        )
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_amount"
    assert resp.json()["details"][0]["field"] == "amount"


async def test_bounds_are_inclusive(kernel):
    async with http_client(kernel) as client:
        low = await client.post(
            "/v1/credits/top-up", json={"amount": 0.01}, headers={"X-Agent-ID": Account.create().address}
        )
        high = await client.post(
            "/v1/credits/top-up", json={"amount": 1000}, headers={"X-Agent-ID": Account.create().address}
        )
    assert low.status_code == high.status_code == 402
    assert low.json()["amount_usdc"] == "0.010000" and high.json()["amount_usdc"] == "1000.000000"


async def test_access_token_sessions_are_refused(kernel):
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()["token"]
        resp = await client.post("/v1/credits/top-up", json={"amount": 1}, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 503
    assert resp.json()["error"] == "route_unavailable_for_access_tokens"


async def test_unfunded_payment_fails_verification_and_credits_nothing(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        quote = await client.post("/v1/credits/top-up", json={"amount": 1}, headers={"X-Agent-ID": payer.address})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        resp = await client.post(
            "/v1/credits/top-up", json={"amount": 1}, headers={"X-Agent-ID": payer.address, "payment-signature": header}
        )
    assert resp.status_code == 402
    assert resp.json()["error"] == "payment_verification_failed"
    assert resp.json()["details"]["reason"] == "invalid_exact_evm_insufficient_balance"
    assert resp.headers["PAYMENT-REQUIRED"]
    assert await CreditTopUp.count() == 0


async def test_payment_for_another_amount_is_refused(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await _fund(client, payer.address)
        quote = await client.post("/v1/credits/top-up", json={"amount": 1}, headers={"X-Agent-ID": payer.address})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        resp = await client.post(
            "/v1/credits/top-up", json={"amount": 2}, headers={"X-Agent-ID": payer.address, "payment-signature": header}
        )
    assert resp.status_code == 402
    assert resp.json()["details"]["reason"] == "quote_mismatch"


async def test_settled_but_not_credited_then_retry_credits_once(kernel, db_kind):
    """A real storage failure (a trigger refusing the top-up row) after settlement:
    500 top_up_settled_not_credited; the same payment retried later credits once."""
    payer = Account.create()
    engine = kernel.db.engine
    if db_kind == "sqlite":
        await engine._run_in_new_connection(
            "CREATE TRIGGER refuse_top_up BEFORE INSERT ON tw_credit_top_ups BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
    else:
        await engine._run_in_pool(
            "CREATE OR REPLACE FUNCTION refuse_top_up() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$ LANGUAGE plpgsql"
        )
        await engine._run_in_pool(
            "CREATE TRIGGER refuse_top_up BEFORE INSERT ON tw_credit_top_ups FOR EACH ROW EXECUTE FUNCTION refuse_top_up()"
        )
    try:
        async with http_client(kernel) as client:
            await _fund(client, payer.address)
            quote = await client.post("/v1/credits/top-up", json={"amount": 3}, headers={"X-Agent-ID": payer.address})
            headers = {
                "X-Agent-ID": payer.address,
                "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
            }
            failed = await client.post("/v1/credits/top-up", json={"amount": 3}, headers=headers)
            assert failed.status_code == 500
            assert failed.json()["error"] == "top_up_settled_not_credited"
            mid = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
            assert mid["on_chain_balance"] == "2.000000" and mid["credits_balance"] == "0.000000"

            if db_kind == "sqlite":
                await engine._run_in_new_connection("DROP TRIGGER refuse_top_up")
            else:
                await engine._run_in_pool("DROP TRIGGER refuse_top_up ON tw_credit_top_ups")

            retried = await client.post("/v1/credits/top-up", json={"amount": 3}, headers=headers)
            assert retried.status_code == 200, retried.text
            assert retried.json()["credits_balance"] == "3.000000"
            third = await client.post("/v1/credits/top-up", json={"amount": 3}, headers=headers)
            assert third.json()["already_credited"] is True
            end = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    finally:
        if db_kind == "postgres":
            await engine._run_in_pool("DROP TRIGGER IF EXISTS refuse_top_up ON tw_credit_top_ups")
    assert end["on_chain_balance"] == "2.000000" and end["credits_balance"] == "3.000000"
    credits = await LedgerEntry.select().where(LedgerEntry.kind == "top_up")
    assert len(credits) == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_the_reconciler_credits_a_settled_top_up_left_uncredited(kernel, db_kind):
    payer = Account.create()
    engine = kernel.db.engine
    refuse = (
        "CREATE TRIGGER refuse_top_up BEFORE INSERT ON tw_credit_top_ups BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        if db_kind == "sqlite"
        else "CREATE TRIGGER refuse_top_up BEFORE INSERT ON tw_credit_top_ups FOR EACH ROW EXECUTE FUNCTION refuse_top_up()"
    )
    run = engine._run_in_new_connection if db_kind == "sqlite" else engine._run_in_pool
    if db_kind == "postgres":
        await run(
            "CREATE OR REPLACE FUNCTION refuse_top_up() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$ LANGUAGE plpgsql"
        )
    await run(refuse)
    try:
        async with http_client(kernel) as client:
            await _fund(client, payer.address)
            quote = await client.post("/v1/credits/top-up", json={"amount": 2}, headers={"X-Agent-ID": payer.address})
            headers = {
                "X-Agent-ID": payer.address,
                "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
            }
            assert (await client.post("/v1/credits/top-up", json={"amount": 2}, headers=headers)).status_code == 500
    finally:
        await run("DROP TRIGGER refuse_top_up" + (" ON tw_credit_top_ups" if db_kind == "postgres" else ""))
    assert await check_ledger() == [
        f"top-up payment {(await TopUpAttempt.select().first())['id']} settled but was never credited"
    ]
    # the client never comes back: the reconciler credits it
    assert (await kernel.reconciler.run_once(grace_s=0))["top_ups_credited"] == 1
    assert (await Agent.select(Agent.credits).where(Agent.wallet_address == payer.address.lower()).first())[
        "credits"
    ] == 2_000_000
    assert await check_ledger(max_intermediate_age_s=0) == []
