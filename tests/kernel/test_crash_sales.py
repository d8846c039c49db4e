"""Fault test: an API process SIGKILLed while sellers fulfil orders of the souls marketplace,
on SQLite and PostgreSQL. A fulfilment is one transaction (the order closed, the seller's
share credited with its receipt, the buyer's job completed), so after the kill every order
is either wholly fulfilled or still open; the open ones are fulfilled after the restart;
each share is paid exactly once and the ledger check holds."""

from __future__ import annotations

import asyncio
import json
import signal

import httpx
from eth_account import Account

from tests.kernel.test_crash_holds import free_port, start_api
from tollway._core.credits.ledger_check import check_ledger
from tollway.testing import credits_session, http_client, proof_headers

SOUL = {
    "slug": "quick",
    "name": "Quick",
    "category": "data",
    "services": [{"slug": "answer", "title": "An answer", "price_usdc": "0.50", "category": "data"}],
}
ORDERS = 24


async def test_sales_survive_a_killed_api_process(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_souls"})
    seller = Account.create()
    async with http_client(kernel) as client:
        raw = json.dumps(SOUL).encode()
        headers = {
            **proof_headers(seller, scope="write", method="POST", path="/v1/soul/register", body=raw),
            "content-type": "application/json",
        }
        key = (await client.post("/v1/soul/register", content=raw, headers=headers)).json()["soul_key"]
        _buyer, auth = await credits_session(client, "20")
        order_ids = []
        for i in range(ORDERS):
            accepted = await client.post(
                "/v1/tools/souls/buy",
                json={"soul": "quick", "service": "answer", "price_usdc": "0.50", "request": {"n": i}},
                headers=auth,
            )
            assert accepted.status_code == 202, accepted.text
            order_ids.append(accepted.json()["request_id"])
    soul_key = {"Authorization": f"Bearer {key}"}

    port = free_port()
    api = await start_api(kernel, port, TOLLWAY_TEST_INSTALLED="tollway_souls")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as remote:
            calls = [
                asyncio.create_task(
                    remote.post(f"/v1/soul/orders/{o}/fulfil", json={"result": {"n": o}}, headers=soul_key)
                )
                for o in order_ids
            ]
            answered = 0
            for call in asyncio.as_completed(calls):
                try:
                    answered += (await call).status_code == 200
                except httpx.HTTPError:
                    pass
                if answered >= 3:
                    api.send_signal(signal.SIGKILL)  # others are in flight
                    break
            await api.wait()
            await asyncio.gather(*calls, return_exceptions=True)
    finally:
        if api.returncode is None:
            api.kill()
            await api.wait()

    assert await check_ledger() == []
    async with http_client(kernel) as client:
        states = {
            o["order_id"]: o["state"]
            for o in (await client.get("/v1/soul/orders", params={"limit": "100"}, headers=soul_key)).json()["orders"]
        }
        assert set(states.values()) <= {"open", "fulfilled"} and list(states.values()).count("fulfilled") >= 3
        for order_id, state in states.items():
            job = (await client.get(f"/v1/requests/{order_id}", headers=auth)).json()
            assert (job["status"] == "completed") == (state == "fulfilled"), (order_id, state, job["status"])
            if state == "open":  # after the restart the seller finishes the rest
                done = await client.post(
                    f"/v1/soul/orders/{order_id}/fulfil", json={"result": {"n": order_id}}, headers=soul_key
                )
                assert done.status_code == 200, done.text
        earnings = (await client.get("/v1/soul/earnings", headers=soul_key)).json()
        buyer = (await client.get("/v1/balance", headers=auth)).json()
    assert (
        earnings["orders_fulfilled"] == ORDERS
        and earnings["earned_usdc"] == "9.600000"
        and earnings["credits_balance"] == "9.600000"
    )
    assert earnings["service_fees_usdc"] == "2.400000" and buyer["credits_balance"] == "8.000000"
    assert await check_ledger(max_intermediate_age_s=0) == []
