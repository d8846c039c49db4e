"""The ACP checkout as a seller, on SQLite and PostgreSQL: a session created, updated, read,
completed through the local Stripe, with its order, receipt and credits; every request and
answer validated against the 2026-01-30 JSON Schemas."""

from __future__ import annotations

from commerce_support import merchant, stripe_standin

from tollway import storage
from tollway.testing import ledger_problems


async def _credits(agent_id: str) -> int:
    return int((await storage.row("SELECT credits FROM tw_agents WHERE id = {}", agent_id))["credits"])


async def test_a_credit_pack_is_bought_and_credited(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, agent):
        session = await acp.create("credits_5usd", "credits_5usd")
        assert session["status"] == "ready_for_payment"
        (line,) = session["line_items"]
        assert line["quantity"] == 2 and line["unit_amount"] == 500
        assert [t["amount"] for t in session["totals"] if t["type"] == "total"] == [1000]
        again = await acp.get(f"/v1/checkout_sessions/{session['id']}")
        assert again.json() == session
        done = await acp.complete(session["id"], stripe.grant())
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["status"] == "completed"
        assert body["order"]["checkout_session_id"] == session["id"]
        assert len(stripe.succeeded()) == 1 and stripe.succeeded()[0]["amount"] == 1000
        assert await _credits(agent) == 10_000_000
        receipt = await storage.row("SELECT body FROM tw_receipts WHERE job_id = {}", session["id"])
        signed = storage.loads(receipt["body"])
        assert signed["category"] == "commerce" and signed["amount_usdc"] == "10.000000"
        assert await ledger_problems() == []


async def test_the_order_permalink_and_the_openapi_document(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, client, acp, _agent):
        session = await acp.create("credits_5usd")
        order = (await acp.complete(session["id"], stripe.grant())).json()["order"]
        path = order["permalink_url"].removeprefix("https://shop.example.com")
        shown = (await client.get(path)).json()
        assert shown["id"] == order["id"] and shown["total"] == 500 and shown["status"] == "confirmed"
        doc = (await client.get("/schema/openapi.json")).json()
        create = doc["paths"]["/v1/checkout_sessions"]["post"]
        assert create["operationId"] == "acp_create_checkout_session"
        assert create["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith("/CheckoutSession")
        assert create["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
        assert create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "/CheckoutSessionCreateRequest"
        )
        for suffix in ("", "/complete", "/cancel"):
            assert "post" in doc["paths"]["/v1/checkout_sessions/{checkout_session_id}" + suffix]
