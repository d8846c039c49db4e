"""A sale paid by an x402 payment that settles late, against a real facilitator over HTTP, on
SQLite and PostgreSQL. A job starts only once its payment has settled (the kernel's rule,
core/jobs/job_payments.py): while the buyer's payment is pending the seller has no order to
fulfil (nothing can be paid out of it) and the buyer's job says it waits for the payment;
once the reconciler finds the transfer on chain the order reaches the seller, who fulfils
and is credited its share. A payment the facilitator refuses ends the job `payment_failed`,
charged nothing, with no order ever made. The ledger check holds at each step."""

from __future__ import annotations

import json

import pytest
from eth_account import Account

from tests.support.facilitator_server import running_facilitator
from tollway import now_ms
from tollway._core.credits.ledger_check import check_ledger
from tollway.testing import http_client, pay_402, proof_headers
from tollway_souls import orders

SOUL = {
    "slug": "slow",
    "name": "Slow",
    "category": "data",
    "services": [{"slug": "answer", "title": "An answer", "price_usdc": "2", "category": "data"}],
}
BUY = {"soul": "slow", "service": "answer", "price_usdc": "2", "request": {"q": "?"}, "deadline_s": 60}


@pytest.fixture
async def facilitator():
    async with running_facilitator("base-sepolia") as fac:
        yield fac


async def _market(kernel_factory, facilitator):
    kernel = await kernel_factory(
        installed={"tollway_souls"},
        env={
            "TOLLWAY_NETWORK": "base-sepolia",
            "TOLLWAY_FACILITATOR_URL": facilitator.url,
            "TOLLWAY_FACILITATOR_TIMEOUT_S": "1",
            "TOLLWAY_CHAIN_RPC_URL": facilitator.url + "/rpc",
        },
    )
    seller, buyer = Account.create(), Account.create()
    facilitator.fund(buyer.address, 5_000_000)
    async with http_client(kernel) as client:
        raw = json.dumps(SOUL).encode()
        headers = {
            **proof_headers(seller, scope="write", method="POST", path="/v1/soul/register", body=raw),
            "content-type": "application/json",
        }
        key = (await client.post("/v1/soul/register", content=raw, headers=headers)).json()["soul_key"]
        quote = await client.post("/v1/tools/souls/buy", json=BUY)
        paid = {
            "payment-signature": pay_402(buyer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia"),
            "X-Quote-ID": quote.json()["quote_id"],
        }
        facilitator.settle_mode = "hang"
        accepted = await client.post("/v1/tools/souls/buy", json=BUY, headers=paid)
    assert accepted.status_code == 202, accepted.text
    return kernel, seller, buyer, {"Authorization": f"Bearer {key}"}, accepted.json()["request_id"]


async def test_a_seller_is_paid_only_once_the_buyers_payment_settles(kernel_factory, facilitator) -> None:
    kernel, seller, buyer, soul_key, order_id = await _market(kernel_factory, facilitator)
    async with http_client(kernel) as client:
        listed = (await client.get("/v1/soul/orders", headers=soul_key)).json()["orders"]
        early = await client.post(f"/v1/soul/orders/{order_id}/fulfil", json={"result": {"a": 1}}, headers=soul_key)
        waiting = (await client.get(f"/v1/requests/{order_id}", headers={"X-Agent-ID": buyer.address})).json()
        assert listed == [] and early.status_code == 404  # no order before the payment settles
        assert waiting["status"] == "pending" and "payment" in waiting["message"]
        assert (await client.get("/v1/soul/earnings", headers=soul_key)).json()["credits_balance"] == "0.000000"
        assert await check_ledger() == []

        facilitator.settle_finished.clear()
        facilitator.release()
        await facilitator.settle_finished.wait()  # the transfer landed after the service gave up waiting
        facilitator.settle_mode = "ok"
        await kernel.reconciler.run_once(grace_s=0)
        (order,) = (await client.get("/v1/soul/orders", headers=soul_key)).json()["orders"]
        done = await client.post(f"/v1/soul/orders/{order_id}/fulfil", json={"result": {"a": 1}}, headers=soul_key)
        job = (await client.get(f"/v1/requests/{order_id}", headers={"X-Agent-ID": buyer.address})).json()
        earnings = (await client.get("/v1/soul/earnings", headers=soul_key)).json()
    assert order["payment_status"] == "settled"
    assert done.status_code == 200 and done.json()["payment_status"] == "settled"
    assert job["status"] == "completed" and earnings["credits_balance"] == "1.600000"
    assert len(facilitator.transactions) == 1 and facilitator.balance(buyer.address) == 3_000_000
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_payment_that_never_settles_is_charged_nothing(kernel_factory, facilitator) -> None:
    kernel, _seller, buyer, soul_key, order_id = await _market(kernel_factory, facilitator)
    facilitator.settle_mode = "fail"
    facilitator.settle_finished.clear()
    facilitator.release()
    await facilitator.settle_finished.wait()  # the hanging settlement is refused after all
    await kernel.reconciler.run_once(grace_s=0)  # asked again: it failed, nothing moved
    assert await orders.expire_due(kernel.platform, now_ms() + 61_000) == 0  # no order was ever made
    async with http_client(kernel) as client:
        job = (await client.get(f"/v1/requests/{order_id}", headers={"X-Agent-ID": buyer.address})).json()
        (receipt,) = (await client.get("/v1/analytics/receipts", headers={"X-Agent-ID": buyer.address})).json()[
            "receipts"
        ]
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": buyer.address})).json()
        earnings = (await client.get("/v1/soul/earnings", headers=soul_key)).json()
    assert job["status"] == "failed" and job["error_code"] == "payment_failed"
    assert receipt["status"] == "not_charged" and balance["credits_balance"] == "0.000000"
    assert facilitator.transactions == [] and facilitator.balance(buyer.address) == 5_000_000
    assert earnings["credits_balance"] == "0.000000" and earnings["orders_open"] == 0
    assert await check_ledger(max_intermediate_age_s=0) == []
