"""Operator refunds of completed ACP orders, on SQLite and PostgreSQL, through the local Stripe:
in part and in full, never beyond what was paid (also under concurrency), once per
Idempotency-Key; a credit pack's unspent credits taken back and its spent ones left; a soul
seller's share taken back; the buyer's refund receipts; the ACP order_update event with the
order's refunds, signed and valid against the 2026-01-30 webhook schema."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acp_schemas import validate
from commerce_support import OPERATOR, AcpClient, merchant, register_agent, stripe_standin
from test_acp_soul_orders import register_soul

from tollway import now_ms, storage
from tollway.testing import ledger_problems, webhook_receiver
from tollway_commerce.acp import signing


def refunds_path(order_id: str) -> str:
    return f"/v1/tools/internal/commerce/orders/{order_id}/refunds"


async def refund(client: Any, order_id: str, key: str | None, **body: Any) -> Any:
    headers = {**OPERATOR, **({"Idempotency-Key": key} if key else {})}
    return await client.post(refunds_path(order_id), json=body, headers=headers)


async def hooked_platform(client: Any, agent: str, url: str) -> tuple[AcpClient, str]:
    """A platform whose token has a webhook URL: its ACP client and the webhook secret."""
    issued = await client.post(
        "/v1/tools/internal/acp-tokens",
        json={"platform": "hooked", "agent_id": agent, "webhook_url": url},
        headers=OPERATOR,
    )
    assert issued.status_code == 201, issued.text
    return AcpClient(client, issued.json()["token"]), issued.json()["webhook_secret"]


async def credits(agent: str) -> int:
    return int((await storage.row("SELECT credits FROM tw_agents WHERE id = {}", agent))["credits"])


async def test_a_credit_pack_is_refunded_in_part_then_in_full_taking_back_only_unspent_credits(kernel_factory) -> None:
    with webhook_receiver() as hooks:
        async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (kernel, client, _acp, agent):
            acp, secret = await hooked_platform(client, agent, hooks.url)
            buyer = await register_agent(client)
            token = (
                await client.post("/v1/tools/internal/access-tokens", json={"agent_id": buyer}, headers=OPERATOR)
            ).json()["token"]
            session = await acp.create("credits_5usd", buyer={"email": "b@example.com", "customer_id": buyer})
            done = await acp.complete(session["id"], stripe.grant())
            order_id = done.json()["order"]["id"]
            # the buyer spends a cent of its 5 USDC of credits on a paid tool
            spent = await client.post(
                "/v1/tools/commerce/search", json={"query": "lamp"}, headers={"Authorization": f"Bearer {token}"}
            )
            assert spent.status_code == 200, spent.text
            assert await credits(buyer) == 4_990_000

            assert (await refund(client, order_id, None, amount=200)).status_code == 400  # Idempotency-Key required
            part = await refund(client, order_id, "part-1", amount=200, reason="changed their mind")
            assert part.status_code == 201, part.text
            first = part.json()
            assert first["status"] == "succeeded" and first["amount"] == 200 and first["refunded_total"] == 200
            assert first["credits_taken_back_usdc"] == "2.000000" and first["psp_refund_id"].startswith("re_")
            assert await credits(buyer) == 2_990_000
            replay = await refund(client, order_id, "part-1", amount=200, reason="changed their mind")
            assert replay.json() == first  # the same key: the same refund, not a second one
            conflict = await refund(client, order_id, "part-1", amount=300)
            assert conflict.status_code == 422 and conflict.json()["error"] == "idempotency_conflict"
            beyond = await refund(client, order_id, "too-much", amount=301)
            assert beyond.status_code == 409 and beyond.json()["error"] == "exceeds_paid"

            rest = await refund(client, order_id, "rest")  # no amount: all that is left
            assert rest.status_code == 201, rest.text
            second = rest.json()
            assert second["amount"] == 300 and second["refunded_total"] == 500
            # 3.00 of credits to take back, 2.99 left: what was spent stays spent, never below zero
            assert second["credits_taken_back_usdc"] == "2.990000" and await credits(buyer) == 0
            nothing = await refund(client, order_id, "again")
            assert nothing.status_code == 409 and nothing.json()["error"] == "exceeds_paid"
            assert (await refund(client, "ord_unknown", "x")).status_code == 404

            (pi,) = stripe.succeeded()
            assert stripe.charges[pi["latest_charge"]]["amount_refunded"] == 500 and [
                r["amount"] for r in stripe.refunds
            ] == [200, 300]
            receipts = await storage.rows(
                "SELECT receipt_id, agent_id, amount, body FROM tw_receipts WHERE status = 'refund' ORDER BY amount"
            )
            assert [(r["agent_id"], int(r["amount"])) for r in receipts] == [(buyer, 2_000_000), (buyer, 3_000_000)]
            assert {r["receipt_id"] for r in receipts} == {first["receipt_id"], second["receipt_id"]}
            body = storage.loads(receipts[0]["body"])
            assert body["category"] == "commerce" and body["subcategory"] == "refund"
            assert body["job_id"] == session["id"] and body["settlement_tx"] == first["psp_refund_id"]
            await kernel.webhooks.run_due()
            assert await ledger_problems() == []
        updates = []
        for headers, raw in hooks.received:
            event = json.loads(raw)
            validate("webhook:WebhookEvent", event)
            assert signing.verify_webhook(secret, raw, headers["merchant-signature"])
            if event["type"] == "order_update" and event["data"]["refunds"]:
                updates.append(event["data"])
        assert sorted((u["status"], [r["amount"] for r in u["refunds"]]) for u in updates) == [
            ("fulfilled", [200]),
            ("fulfilled", [200, 300]),
        ]
        assert all(r["type"] == "original_payment" for u in updates for r in u["refunds"])


async def test_a_soul_service_refund_takes_back_the_sellers_share(kernel_factory) -> None:
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed={"tollway_souls"}) as (_k, client, acp, agent),
    ):
        key = await register_soul(client)
        seller = (await client.get("/v1/soul/dashboard", headers={"Authorization": f"Bearer {key}"})).json()
        seller_agent = (await storage.row("SELECT agent_id FROM souls_agents WHERE id = {}", seller["id"]))["agent_id"]
        session = await acp.create("soul:quick/answer")
        order_id = (await acp.complete(session["id"], stripe.grant())).json()["order"]["id"]
        assert await credits(seller_agent) == 2_000_000
        half = await refund(client, order_id, "half", amount=125)
        assert half.status_code == 201, half.text
        assert half.json()["share_taken_back_usdc"] == "1.000000" and await credits(seller_agent) == 1_000_000
        assert half.json()["credits_taken_back_usdc"] == "0.000000" and await credits(agent) == 0
        seller_auth = {"Authorization": f"Bearer {key}"}
        still = (await client.get(f"/v1/soul/orders/{session['id']}", headers=seller_auth)).json()
        assert still["state"] == "open"  # refunded in part: the seller still delivers
        rest = await refund(client, order_id, "rest")
        assert rest.json()["share_taken_back_usdc"] == "1.000000" and await credits(seller_agent) == 0
        ended = (await client.get(f"/v1/soul/orders/{session['id']}", headers=seller_auth)).json()
        assert ended["state"] == "refunded"  # refunded in full before delivery: the order ends
        late = await client.post(f"/v1/soul/orders/{session['id']}/fulfil", json={"result": {}}, headers=seller_auth)
        assert late.status_code == 409 and late.json()["state"] == "refunded"
        earnings = (await client.get("/v1/soul/earnings", headers={"Authorization": f"Bearer {key}"})).json()
        assert earnings["credits_balance"] == "0.000000"
        assert await ledger_problems() == []


async def test_concurrent_refunds_never_add_up_above_what_was_paid(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, client, acp, agent):
        session = await acp.create("credits_20usd")
        order_id = (await acp.complete(session["id"], stripe.grant())).json()["order"]["id"]
        answers = await asyncio.gather(*(refund(client, order_id, f"k{i}", amount=300) for i in range(10)))
        codes = sorted(a.status_code for a in answers)
        assert codes == [201] * 6 + [409] * 4, [a.text for a in answers]
        assert all(a.json()["error"] == "exceeds_paid" for a in answers if a.status_code == 409)
        (pi,) = stripe.succeeded()
        assert stripe.charges[pi["latest_charge"]]["amount_refunded"] == 1800 and len(stripe.refunds) == 6
        refunded = await storage.row("SELECT COALESCE(SUM(amount), 0) AS n FROM tw_receipts WHERE status = 'refund'")
        assert int(refunded["n"]) == 18_000_000
        assert await credits(agent) == 2_000_000  # 20.00 bought, 18.00 taken back
        left = await refund(client, order_id, "last")
        assert left.status_code == 201 and left.json()["amount"] == 200 and await credits(agent) == 0
        assert await ledger_problems() == []


async def test_a_refund_the_psp_did_not_answer_is_finished_by_the_reconciler_once(kernel_factory) -> None:
    from tollway_commerce import refunds

    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (kernel, client, acp, agent):
        session = await acp.create("credits_5usd")
        order_id = (await acp.complete(session["id"], stripe.grant())).json()["order"]["id"]
        stripe.refund_failures = 10  # Stripe answers 500 to every try of the library
        down = await refund(client, order_id, "down", amount=100)
        assert down.status_code == 503 and down.json()["error"] == "psp_unavailable"
        assert stripe.refunds == [] and await credits(agent) == 5_000_000
        busy = await refund(client, order_id, "down", amount=100)  # the same key while it is still in flight
        assert busy.status_code == 409 and busy.json()["error"] == "refund_in_progress"
        other = await refund(client, order_id, "other")  # the pending refund's amount is held: 4.00 left
        assert other.status_code == 503  # still down, and held too
        stripe.refund_failures = 0
        assert await refunds.sweep(kernel.platform, now_ms() + 120_000) == 2
        assert await refunds.sweep(kernel.platform, now_ms() + 120_000) == 0  # finished once
        assert sorted(r["amount"] for r in stripe.refunds) == [100, 400]
        assert await credits(agent) == 0
        again = await refund(client, order_id, "down", amount=100)
        assert again.status_code == 201 and again.json()["status"] == "succeeded"
        assert again.json()["refunded_total"] == 500
        assert await ledger_problems() == []
