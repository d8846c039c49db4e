"""commerce_buy against the stand-in ACP merchant over real HTTP, on SQLite and PostgreSQL:
a purchase within the cap keeps what the merchant charged and returns the rest; every way a
checkout cannot be completed (a price above the cap, a decline, 3-D Secure, out of stock, a
merchant that is down, a wrong signature) fails `checkout_failed`, charges nothing at the
merchant and refunds the agent in full. Every ACP request and answer is validated against
the protocol's 2026-01-30 JSON Schemas, and the ledger check stays clean."""

from __future__ import annotations

import pytest
from acp_merchant_standin import acp_merchant
from buyer_support import (
    balance,
    buy_body,
    commerce_kernel,
    configure,
    validate_exchanges,
)

from tollway.testing import count_receipts, credits_session, http_client, ledger_problems, wait_for_job, worker_for
from tollway_commerce.buyer.tables import Order


async def _buy(kernel, client, auth, body):
    accepted = await client.post("/v1/tools/commerce/buy", json=body, headers=auth)
    assert accepted.status_code == 202, accepted.text
    worker = worker_for(kernel)
    worker.start()
    try:
        return await wait_for_job(client, accepted.json()["request_id"], auth, every_s=0.05)
    finally:
        await worker.stop()


async def test_a_purchase_within_the_cap_keeps_the_total_and_returns_the_rest(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        job = await _buy(kernel, client, auth, buy_body(("tee-red-m", 2), max_total="60"))
        assert job["status"] == "completed", job
        order = job["result"]["result"]
        # 2 x 19.99 + 10 % tax (3.99) + standard shipping (5.00), the cheapest option
        assert order["total"] == {"amount": 4897, "currency": "usd", "usdc": "48.970000"}
        assert order["spent_usdc"] == "48.970000" and order["returned_usdc"] == "11.030000"
        assert order["fee_usdc"] == "0.250000" and order["status"] == "confirmed"
        assert order["merchant_order_id"].startswith("ord_") and order["permalink_url"].startswith(merchant.url)
        assert await balance(client, auth) == "50.780000"  # 100 - (60 + 0.25) + 11.03
        receipt = (await client.get(f"/v1/receipts/{job['receipt_id']}", headers=auth)).json()
        assert receipt["category"] == "commerce" and receipt["returned_usdc"] == "11.030000"
    assert [c[1] for c in merchant.charges] == [4897]
    token = merchant.tokens[merchant.charges[0][2]]
    assert token["usage_limits"]["max_amount"] == 4897 and token["usage_limits"]["currency"] == "usd"
    assert token["shared_metadata"]["checkout_session_id"] == merchant.charges[0][0]
    assert validate_exchanges(merchant) >= 3
    assert await ledger_problems() == []


async def test_a_chosen_fulfilment_option_and_a_euro_price(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        body = buy_body(("scarf-eur", 1), max_total="45", fulfillment_option="ship_express")
        job = await _buy(kernel, client, auth, body)
        assert job["status"] == "completed", job
        # 20.00 + 2.00 tax + 15.00 express = 37.00 EUR, at 1.10 USDC a euro
        assert job["result"]["result"]["total"] == {"amount": 3700, "currency": "eur", "usdc": "40.700000"}
    validate_exchanges(merchant)
    assert await ledger_problems() == []


async def _failed(kernel_factory, merchant, body, *, configure_more=None, before=None):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant, **(configure_more or {}))
        if before is not None:
            before()
        _, auth = await credits_session(client, "100")
        job = await _buy(kernel, client, auth, body)
        assert job["status"] == "failed", job
        assert job["error_code"] == "checkout_failed" and job["error_status"] == 502
        assert job["error"].startswith("commerce checkout could not be completed")
        assert await balance(client, auth) == "100.000000"  # everything refunded, the fee too
        receipt = (await client.get(f"/v1/receipts/{job['receipt_id']}", headers=auth)).json()
        assert receipt["status"] == "refunded"
        order = await Order.select().where(Order.id == job["request_id"]).first()
        assert order["state"] == "failed"
    assert merchant.charges == []
    assert await ledger_problems() == []
    return job


async def test_a_price_above_the_cap_charges_nothing_at_the_merchant_and_refunds(kernel_factory, merchant):
    def rise():  # after the feed was read (19.99): the merchant's checkout now asks 49.99
        merchant.catalogue["tee-red-m"].price = 4999

    job = await _failed(kernel_factory, merchant, buy_body(("tee-red-m", 1), max_total="30"), before=rise)
    assert "above max_total_usdc 30" in job["error"]
    assert merchant.tokens == {}  # no payment token was even minted
    assert [s["status"] for s in merchant.sessions.values()] == ["canceled"]
    validate_exchanges(merchant)


async def test_a_declined_card_fails_the_checkout(kernel_factory, merchant):
    job = await _failed(kernel_factory, merchant, buy_body(("lamp-declined", 1), max_total="50"))
    assert "payment_declined" in job["error"]
    validate_exchanges(merchant)


async def test_3ds_required_fails_the_checkout(kernel_factory, merchant):
    job = await _failed(kernel_factory, merchant, buy_body(("boots-3ds", 1), max_total="80"))
    assert "3-D Secure" in job["error"]
    assert [s["status"] for s in merchant.sessions.values()] == ["canceled"]
    validate_exchanges(merchant)


async def test_out_of_stock_fails_the_checkout(kernel_factory, merchant):
    job = await _failed(kernel_factory, merchant, buy_body(("kettle-gone", 1), max_total="50"))
    assert "out_of_stock" in job["error"]
    validate_exchanges(merchant)


async def test_a_wrong_signing_key_is_refused_by_the_merchant(kernel_factory, merchant):
    merchant.signing_key = "the-merchants-key"
    job = await _failed(
        kernel_factory, merchant, buy_body(("mug", 1), max_total="50"), configure_more={"signing_key": "another-key"}
    )
    assert "invalid_signature" in job["error"]


async def test_signed_requests_are_accepted(kernel_factory, merchant):
    merchant.signing_key = "the-merchants-key"
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant, signing_key="the-merchants-key")
        _, auth = await credits_session(client, "100")
        job = await _buy(kernel, client, auth, buy_body(("mug", 1), max_total="50"))
        assert job["status"] == "completed", job
    validate_exchanges(merchant)


async def test_a_merchant_that_is_down_fails_the_checkout_and_refunds(kernel_factory):
    with acp_merchant() as merchant:
        from acp_merchant_standin import Item

        merchant.catalogue["mug"] = Item("Enamel Mug", 1500)
        kernel = await commerce_kernel(kernel_factory, merchant)
        async with http_client(kernel) as client:
            await configure(client, merchant)
    # the stand-in is gone: nothing listens at its address any more
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "100")
        job = await _buy(kernel, client, auth, buy_body(("mug", 1), max_total="50"))
        assert job["status"] == "failed" and job["error_code"] == "checkout_failed", job
        assert "could not be reached" in job["error"]
        assert await balance(client, auth) == "100.000000"
    assert await ledger_problems() == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (buy_body(("mug", 1), max_total="50", merchant_id="nowhere"), 404),
        (buy_body(("no-such-thing", 1), max_total="50"), 404),
        (buy_body(("cup-jpy", 1), max_total="50"), 400),  # no JPY rate
        (buy_body(("mug", 1), max_total="10"), 400),  # the feed price alone is above the cap
        (buy_body(("mug", 1), max_total="5000"), 400),  # above the operator's ceiling
        (
            {
                **buy_body(("mug", 1), max_total="50"),
                "items": [{"merchant": "shop", "product_id": "mug"}, {"merchant": "other", "product_id": "x"}],
            },
            400,
        ),
        ({k: v for k, v in buy_body(("mug", 1), max_total="50").items() if k != "max_total_usdc"}, 400),
    ],
)
async def test_a_purchase_that_cannot_be_made_is_refused_before_payment(kernel_factory, merchant, body, status):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        receipts = await count_receipts()
        refused = await client.post("/v1/tools/commerce/buy", json=body, headers=auth)
        assert refused.status_code == status, refused.text
        assert await count_receipts() == receipts and await balance(client, auth) == "100.000000"
    assert merchant.sessions == {}


async def test_without_a_psp_the_buy_tool_answers_503_before_payment(kernel_factory, merchant):
    kernel = await kernel_factory(installed={"tollway_commerce"}, env={})
    async with http_client(kernel) as client:
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
        refused = await client.post("/v1/tools/commerce/buy", json=buy_body(("mug", 1), max_total="50"), headers=auth)
        assert refused.status_code == 503 and refused.json()["error"] == "provider_unavailable", refused.text


async def test_a_run_that_dies_after_the_merchant_completed_is_finished_by_the_next_charging_once(
    kernel_factory, merchant, monkeypatch
):
    """The job's run dies after the merchant completed the checkout and before the order was
    recorded (a worker killed there); the next run goes straight to asking the merchant again:
    complete with the same Idempotency-Key and body (the merchant answers its first answer),
    no new session, no new token; it records the order: one charge, the unspent returned once."""
    import msgspec

    from tollway_commerce.buyer import buy_tool
    from tollway_commerce.buyer.wire import CommerceBuyInput

    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        agent_id, auth = await credits_session(client, "100")
        body = buy_body(("tee-red-m", 2), max_total="60")
        accepted = await client.post("/v1/tools/commerce/buy", json=body, headers=auth)
        assert accepted.status_code == 202, accepted.text
        request_id = accepted.json()["request_id"]

        real = buy_tool.record

        class Killed(BaseException):  # like a kill: no handler of the tool's runs (they catch Exception)
            pass

        async def dies(*args, **kwargs):
            raise Killed("the worker was killed here")

        tool = kernel.tools["commerce_buy"]
        ctx = kernel.tool_runner.contexts.for_run(tool, request_id, agent_id)
        monkeypatch.setattr(buy_tool, "record", dies)
        with pytest.raises(Killed):
            await tool.run(msgspec.convert(body, CommerceBuyInput), ctx)
        assert len(merchant.charges) == 1  # the merchant completed; we never recorded it
        assert (await Order.select(Order.state).where(Order.id == request_id).first())["state"] == "completing"
        monkeypatch.setattr(buy_tool, "record", real)

        worker = worker_for(kernel)
        worker.start()
        try:
            job = await wait_for_job(client, request_id, auth, every_s=0.05)
        finally:
            await worker.stop()
        assert job["status"] == "completed", job
        assert job["result"]["result"]["returned_usdc"] == "11.030000"
        assert await balance(client, auth) == "50.780000"
    assert len(merchant.charges) == 1 and len(merchant.tokens) == 1 and len(merchant.sessions) == 1
    assert len(merchant.token_requests) == 1  # the rerun minted nothing, not even a replay
    assert merchant.requests.count(("POST", "/checkout_sessions")) == 1
    validate_exchanges(merchant)
    assert await ledger_problems() == []


async def test_a_purchase_paid_by_x402_returns_the_unspent_part_as_credits(kernel_factory, merchant):
    """A wallet pays max_total_usdc + fee on chain (x402, the local network); what the total
    did not use comes back to the wallet's agent as credits."""
    from eth_account import Account

    from tollway.testing import OPERATOR, pay_402

    kernel = await commerce_kernel(kernel_factory, merchant)
    wallet = Account.create()
    body = buy_body(("mug", 1), max_total="30")
    async with http_client(kernel) as client:
        await configure(client, merchant)
        await client.post(
            "/v1/tools/internal/chain/fund", json={"address": wallet.address, "amount": "40"}, headers=OPERATOR
        )
        quote = await client.post("/v1/tools/commerce/buy", json=body)
        assert quote.status_code == 402 and quote.json()["amount_usdc"] == "30.250000", quote.text
        paid = {
            "payment-signature": pay_402(wallet, quote.headers["PAYMENT-REQUIRED"]),
            "X-Quote-ID": quote.json()["quote_id"],
        }
        accepted = await client.post("/v1/tools/commerce/buy", json=body, headers=paid)
        assert accepted.status_code == 202, accepted.text
        ids = {"X-Agent-ID": wallet.address}
        worker = worker_for(kernel)
        worker.start()
        try:
            job = await wait_for_job(client, accepted.json()["request_id"], ids, every_s=0.05)
        finally:
            await worker.stop()
        assert job["status"] == "completed", job
        assert job["result"]["result"]["spent_usdc"] == "21.500000"  # 15.00 + 1.50 tax + 5.00 shipping
        held = (await client.get("/v1/balance", headers=ids)).json()
        assert held["credits_balance"] == "8.500000" and held["on_chain_balance"] == "9.750000"
    assert await ledger_problems() == []
