"""Two agents trade on the local network, on SQLite and PostgreSQL: one registers a soul
with two services and a webhook, the other searches, buys with x402 (the same payment
replayed concurrently charges once), the seller receives the signed order webhook and
fulfils it, the buyer's job completes with the result, the buyer rates the service, the
seller withdraws its earnings on-chain, the buyer tags the purchase's value. Balances, both sides' receipts (verified offline
with the published key), the fee split and the seller's earnings are exact."""

from __future__ import annotations

import asyncio

from eth_account import Account
from souls_support import (
    ENV,
    LINGUA,
    OPERATOR,
    PLUGIN,
    finished,
    parked,
    post_with_proof,
    register,
    soul_auth,
    verify_offline,
)

from tollway.testing import http_client, ledger_problems, pay_402, webhook_receiver, worker_for

BUY = {"soul": "lingua", "service": "translate", "price_usdc": "1.25", "request": {"text": "Good morning"}}


async def test_two_agents_trade_a_service_end_to_end(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    seller, buyer = Account.create(), Account.create()
    worker = worker_for(kernel)
    worker.start()
    try:
        with webhook_receiver("/orders") as hooks:
            async with http_client(kernel) as client:
                reg = await register(client, seller, {**LINGUA, "webhook_url": hooks.url})
                assert reg.status_code == 201, reg.text
                soul, key = reg.json()["soul_agent"], reg.json()["soul_key"]
                assert key.startswith("soul_") and soul["wallet_address"].lower() == seller.address.lower()
                assert [s["slug"] for s in soul["services"]] == ["translate", "proofread"] and soul[
                    "soul_price_usdc"
                ] == "0.400000"

                found = (await client.get("/v1/souls/search", params={"q": "french translation"})).json()["results"]
                assert [s["slug"] for s in found] == ["lingua"]

                await client.post(
                    "/v1/tools/internal/chain/fund", json={"address": buyer.address, "amount": "5"}, headers=OPERATOR
                )
                quote = await client.post("/v1/tools/souls/buy", json=BUY)
                assert quote.status_code == 402 and quote.json()["amount_usdc"] == "1.250000"
                header = pay_402(buyer, quote.headers["PAYMENT-REQUIRED"])
                paid = {"payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}
                answers = await asyncio.gather(
                    *[client.post("/v1/tools/souls/buy", json=BUY, headers=paid) for _ in range(8)]
                )
                statuses = sorted(a.status_code for a in answers)
                assert statuses.count(202) == 1 and statuses.count(402) == 7, statuses
                accepted = next(a.json() for a in answers if a.status_code == 202)
                job_id, buyer_ids = accepted["request_id"], {"X-Agent-ID": buyer.address}
                await parked(client, job_id, buyer_ids)

                await kernel.webhooks.run_due()
                ((hook_headers, raw),) = hooks.received
                hook = soul_auth(key)
                secret = (await client.get("/v1/soul/webhook", headers=hook)).json()["secret"]
                assert kernel.platform.verify_webhook(secret, raw, hook_headers["x-service-signature"])
                order = (await client.get("/v1/soul/orders", params={"state": "open"}, headers=hook)).json()["orders"]
                assert [o["order_id"] for o in order] == [job_id] and order[0]["request"] == {"text": "Good morning"}
                assert order[0]["payment_status"] == "settled" and order[0]["seller_share_usdc"] == "1.000000"

                done = await client.post(
                    f"/v1/soul/orders/{job_id}/fulfil", json={"result": {"text": "Bonjour"}}, headers=hook
                )
                assert done.status_code == 200 and done.json()["state"] == "fulfilled", done.text
                again = await client.post(
                    f"/v1/soul/orders/{job_id}/fulfil", json={"result": {"text": "Salut"}}, headers=hook
                )
                assert again.status_code == 409 and again.json()["error"] == "order_closed"
                job = await finished(client, job_id, buyer_ids)
                assert job["status"] == "completed" and job["result"]["result"] == {"text": "Bonjour"}
                assert "message" not in job  # no longer "waiting for the seller"

                rated = await post_with_proof(
                    client, buyer, "/v1/souls/lingua/ratings", {"service": "translate", "stars": 4}
                )
                assert rated.status_code == 200 and rated.json()["rating_avg"] == 4.0
                again = await post_with_proof(
                    client, buyer, "/v1/souls/lingua/ratings", {"service": "translate", "stars": 5, "comment": "fast"}
                )
                assert again.json()["rating_count"] == 1 and again.json()["rating_avg"] == 5.0
                listed = (await client.get("/v1/souls/lingua")).json()
                assert listed["rating_avg"] == 5.0 and listed["rating_count"] == 1

                earnings = (await client.get("/v1/soul/earnings", headers=hook)).json()
                assert earnings == {
                    "soul_agent_id": soul["id"],
                    "earned_usdc": "1.000000",
                    "service_fees_usdc": "0.250000",
                    "orders_fulfilled": 1,
                    "orders_open": 0,
                    "paid_out_usdc": "0.000000",
                    "credits_balance": "1.000000",
                }
                keys = (await client.get("/v1/receipts/keys")).json()
                seller_ids = {"X-Agent-ID": seller.address}
                (bought,) = (await client.get("/v1/analytics/receipts", headers=buyer_ids)).json()["receipts"]
                (earned,) = (await client.get("/v1/analytics/receipts", headers=seller_ids)).json()["receipts"]
                assert bought["category"] == earned["category"] == "agent_to_agent"
                assert bought["soul_agent_id"] == earned["soul_agent_id"] == soul["id"]
                assert (bought["amount_usdc"], bought["service_fee"], bought["status"], bought["execution_status"]) == (
                    "1.250000",
                    "0.250000",
                    "settled",
                    "completed",
                )
                assert (earned["amount_usdc"], earned["service_fee"], earned["status"], earned["payment_method"]) == (
                    "1.000000",
                    "0.250000",
                    "earned",
                    "sale_share",
                )
                assert bought["job_id"] == earned["job_id"] == job_id and bought["payment_method"] == "x402"
                assert verify_offline(bought, keys) and verify_offline(earned, keys)
                assert not verify_offline({**bought, "service_fee": "0.000000"}, keys)
                spend = (await client.get("/v1/analytics/spend/breakdown", headers=seller_ids)).json()
                assert spend["total"] == "0.000000"  # earnings are not spend

                payout = await client.post("/v1/soul/payouts", json={"amount_usdc": "1"}, headers=hook)
                assert payout.status_code == 201 and payout.json()["status"] == "paid", payout.text
                assert payout.json()["to_address"].lower() == seller.address.lower() and payout.json()[
                    "settlement_tx"
                ].startswith("0x")
                too_much = await client.post("/v1/soul/payouts", json={"amount_usdc": "0.5"}, headers=hook)
                assert too_much.status_code == 409 and too_much.json()["error"] == "insufficient_credits"
                tagged = await post_with_proof(
                    client,
                    buyer,
                    "/v1/analytics/value-tags",
                    {"job_id": job_id, "status": "confirmed", "value_usdc": "3"},
                )
                assert (
                    tagged.status_code == 200
                    and tagged.json()["revision"] == bought["revision"] + 1
                    and verify_offline(tagged.json(), keys)
                )
                ros = (
                    await client.get(
                        "/v1/analytics/return-on-spend", params={"category": "agent_to_agent"}, headers=buyer_ids
                    )
                ).json()
                assert (ros["spend_usdc"], ros["value_usdc"], ros["return_on_spend"]) == ("1.250000", "3.000000", 2.4)
                buyer_balance = (await client.get("/v1/balance", headers=buyer_ids)).json()
                seller_balance = (await client.get("/v1/balance", headers=seller_ids)).json()
    finally:
        await worker.stop()
    assert buyer_balance["on_chain_balance"] == "3.750000" and buyer_balance["credits_balance"] == "0.000000"
    assert seller_balance["on_chain_balance"] == "1.000000" and seller_balance["credits_balance"] == "0.000000"
    assert await ledger_problems() == []
