"""A soul service bought over ACP, on SQLite and PostgreSQL: the completed session makes the
souls marketplace's order (the one an x402 purchase of it makes) in the same transaction as
the commerce order, the receipt and the seller's share; the seller is told by its order
webhook, sees the order on its dashboard and fulfils it as it fulfils an x402 one."""

from __future__ import annotations

import json
from typing import Any

from commerce_support import merchant, stripe_standin
from eth_account import Account

from tollway import storage
from tollway.testing import ledger_problems, proof_headers

SOUL = {
    "slug": "quick",
    "name": "Quick",
    "category": "data",
    "webhook_url": "http://127.0.0.1:9/orders",
    "services": [{"slug": "answer", "title": "An answer", "price_usdc": "2.50", "category": "data"}],
}


async def register_soul(client: Any, soul: dict[str, Any] = SOUL) -> str:
    """Register a soul for a new wallet; its soul key."""
    seller = Account.create()
    raw = json.dumps(soul).encode()
    headers = {
        **proof_headers(seller, scope="write", method="POST", path="/v1/soul/register", body=raw),
        "content-type": "application/json",
    }
    registered = await client.post("/v1/soul/register", content=raw, headers=headers)
    assert registered.status_code == 201, registered.text
    return registered.json()["soul_key"]


async def test_a_soul_service_bought_over_acp_is_a_souls_order_the_seller_fulfils(kernel_factory) -> None:
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed={"tollway_souls"}, env={"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"}) as (
            _k,
            client,
            acp,
            agent,
        ),
    ):
        key = await register_soul(client)
        seller = {"Authorization": f"Bearer {key}"}
        session = await acp.create("soul:quick/answer", "soul:quick/answer", metadata={"question": "why?"})
        done = await acp.complete(session["id"], stripe.grant())
        assert done.status_code == 200, done.text

        # the souls order: the session's id, the price of both units, open, paid (the receipt settled)
        order = (await client.get(f"/v1/soul/orders/{session['id']}", headers=seller)).json()
        assert order["state"] == "open" and order["payment_status"] == "settled"
        assert order["price_usdc"] == "5.000000" and order["seller_share_usdc"] == "4.000000"
        assert order["service"] == "answer" and order["request"]["quantity"] == 2
        assert order["request"]["checkout_session_id"] == session["id"]
        assert order["request"]["metadata"] == {"question": "why?"}
        listed = (await client.get("/v1/soul/orders?state=open", headers=seller)).json()
        assert [o["order_id"] for o in listed["orders"]] == [session["id"]]
        # the seller's order webhook, as for an x402 purchase
        hook = await storage.row("SELECT kind, body FROM tw_webhooks WHERE subject = {}", session["id"])
        assert hook is not None and hook["kind"] == "soul_order"
        assert storage.loads(hook["body"])["order"]["order_id"] == session["id"]
        # one commit: the commerce order, the buyer's receipt, the share, the souls order
        commerce = await storage.row("SELECT receipt_id FROM commerce_orders WHERE session_id = {}", session["id"])
        souls = await storage.row("SELECT receipt_id, buyer_agent_id FROM souls_orders WHERE id = {}", session["id"])
        assert souls == {"receipt_id": commerce["receipt_id"], "buyer_agent_id": agent}

        fulfilled = await client.post(
            f"/v1/soul/orders/{session['id']}/fulfil", json={"result": {"answer": "because"}}, headers=seller
        )
        assert fulfilled.status_code == 200, fulfilled.text
        assert fulfilled.json()["state"] == "fulfilled" and fulfilled.json()["result"] == {"answer": "because"}
        again = await client.post(f"/v1/soul/orders/{session['id']}/fulfil", json={"result": {}}, headers=seller)
        assert again.status_code == 409 and again.json()["state"] == "fulfilled"
        earnings = (await client.get("/v1/soul/earnings", headers=seller)).json()
        assert earnings["earned_usdc"] == "4.000000" and earnings["orders_fulfilled"] == 1  # the share once
        earned = await storage.rows("SELECT amount FROM tw_receipts WHERE status = 'earned'")
        assert [int(r["amount"]) for r in earned] == [4_000_000]
        assert await ledger_problems() == []
