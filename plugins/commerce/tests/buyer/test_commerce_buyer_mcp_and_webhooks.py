"""commerce_search and commerce_buy over MCP, and the merchant's order webhooks (signed with
the merchant's webhook secret) updating the order and notifying the agent; on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json

from acp_schemas import validate
from buyer_support import buy_body, commerce_kernel, configure, validate_exchanges
from mcp import Client

from tollway.testing import credits_session, http_client, ledger_problems, mcp_server_for, wait_for_job, worker_for
from tollway_commerce.buyer.tables import Order

SECRET = "the-merchants-webhook-secret"


def data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def test_search_and_buy_over_mcp(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant)
        _, auth = await credits_session(client, "100")
    token = auth["Authorization"].split()[1]
    worker = worker_for(kernel)
    worker.start()
    try:
        async with Client(mcp_server_for(kernel, token=token)) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            found = data(await mcp.call_tool("commerce_search", {"query": "enamel mug", "in_stock": True}))
            product = found["result"]["products"][0]
            bought = data(
                await mcp.call_tool(
                    "commerce_buy",
                    buy_body((product["product_id"], 1), max_total="30", merchant_id=product["merchant"]),
                )
            )
        async with http_client(kernel) as client:
            job = await wait_for_job(client, bought["request_id"], auth, every_s=0.05)
    finally:
        await worker.stop()
    assert {"commerce_search", "commerce_buy"} <= names
    assert not {n for n in names if "merchant" in n}  # the operator's routes are not MCP tools
    assert product["product_id"] == "mug" and product["price"]["usdc"] == "15.000000"
    assert bought["status"] == "pending"
    assert job["status"] == "completed", job
    assert job["result"]["result"]["spent_usdc"] == "21.500000"  # 15.00 + 1.50 tax + 5.00 shipping
    validate_exchanges(merchant)
    assert await ledger_problems() == []


def _event(session_id: str, status: str, refunds=()) -> bytes:
    event = {
        "type": "order_update" if status != "created" else "order_create",
        "data": {
            "type": "order",
            "checkout_session_id": session_id,
            "permalink_url": f"https://shop.example/orders/{session_id}",
            "status": status,
            "refunds": list(refunds),
        },
    }
    validate("webhook:WebhookEvent", event)
    return json.dumps(event).encode()


def _signed(raw: bytes, secret: str = SECRET) -> dict[str, str]:
    return {
        "Merchant-Signature": hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest(),
        "Content-Type": "application/json",
        "Request-Id": "req_merchant_1",
    }


async def bought_mug(kernel, client) -> tuple[str, dict[str, str], dict]:
    """An agent with 100 USDC of credits buys a mug (max 30): its id, auth headers and finished job."""
    agent_id, auth = await credits_session(client, "100")
    accepted = await client.post("/v1/tools/commerce/buy", json=buy_body(("mug", 1), max_total="30"), headers=auth)
    worker = worker_for(kernel)
    worker.start()
    try:
        job = await wait_for_job(client, accepted.json()["request_id"], auth, every_s=0.05)
    finally:
        await worker.stop()
    return agent_id, auth, job


async def test_order_webhooks_update_the_order_and_notify_the_agent(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant, webhook_secret=SECRET)
        agent_id, auth, job = await bought_mug(kernel, client)
        session_id = job["result"]["result"]["checkout_session_id"]
        path = "/v1/commerce/merchants/shop/order-events"

        raw = _event(session_id, "shipped", [{"type": "original_payment", "amount": 150}])
        taken = await client.post(path, content=raw, headers=_signed(raw))
        assert taken.status_code == 200, taken.text
        assert taken.json() == {"received": True, "request_id": "req_merchant_1"}

        older = _event(session_id, "confirmed")  # arrives after a later one: received, changes nothing
        assert (await client.post(path, content=older, headers=_signed(older))).status_code == 200

        forged = _event(session_id, "canceled")
        refused = await client.post(path, content=forged, headers=_signed(forged, "not-the-secret"))
        assert refused.status_code == 401
        validate("webhook:Error", refused.json())
        unsigned = await client.post(path, content=forged, headers={"Content-Type": "application/json"})
        assert unsigned.status_code == 401
        elsewhere = await client.post("/v1/commerce/merchants/nobody/order-events", content=raw, headers=_signed(raw))
        assert elsewhere.status_code == 401
        unknown = _event("cs_not_ours", "shipped")
        assert (await client.post(path, content=unknown, headers=_signed(unknown))).status_code == 404

        order = await Order.select().where(Order.id == job["request_id"]).first()
        assert order["order_status"] == "shipped"
        assert json.loads(order["refunds"]) == [{"type": "original_payment", "amount": 150}]
        notes = (await client.get("/v1/tools/notifications", headers=auth)).json()["notifications"]
        shipped = [n for n in notes if n["type"] == "commerce_order_updated"]
        assert len(shipped) == 1 and shipped[0]["metadata"]["status"] == "shipped"
        assert shipped[0]["metadata"]["order_id"] == job["request_id"] and agent_id


async def test_a_merchants_refunds_are_credited_once_each_and_never_above_what_was_spent(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant, webhook_secret=SECRET)
        agent_id, auth, job = await bought_mug(kernel, client)
        assert job["result"]["result"]["spent_usdc"] == "21.500000"  # 2150 US cents
        session_id = job["result"]["result"]["checkout_session_id"]
        path = "/v1/commerce/merchants/shop/order-events"

        async def balance() -> str:
            return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]

        before = await balance()  # 100 - 21.50 - the 0.25 fee
        assert before == "78.250000"
        raw, headers = merchant.refund(session_id, 500, SECRET)
        validate("webhook:WebhookEvent", json.loads(raw))
        for _ in range(2):  # the merchant's outbox sends it again: credited once
            assert (await client.post(path, content=raw, headers=headers)).status_code == 200
        assert await balance() == "83.250000"
        older, older_headers = merchant.order_event(session_id, SECRET, status="created")
        assert (await client.post(path, content=older, headers=older_headers)).status_code == 200
        assert await balance() == "83.250000"  # an older event repeats the refunds credited
        rest, rest_headers = merchant.refund(session_id, 1650, SECRET, status="canceled")
        assert (await client.post(path, content=rest, headers=rest_headers)).status_code == 200
        assert await balance() == "99.750000"  # all 21.50 spent came back; the fee stays
        beyond, beyond_headers = merchant.refund(session_id, 1000, SECRET, status="canceled")  # more than was paid
        assert (await client.post(path, content=beyond, headers=beyond_headers)).status_code == 200
        assert await balance() == "99.750000"

        notes = (await client.get("/v1/tools/notifications", headers=auth)).json()["notifications"]
        credited = sorted(
            (n["metadata"]["refund_id"], n["metadata"]["credited_usdc"])
            for n in notes
            if n["type"] == "commerce_refund_credited"
        )
        order_id = job["request_id"]
        assert credited == [(f"{order_id}:refund:0", "5.000000"), (f"{order_id}:refund:1", "16.500000")]
        receipts = (await client.get("/v1/analytics/receipts", headers=auth)).json()["receipts"]
        refunds = sorted(r["amount_usdc"] for r in receipts if r["status"] == "refund")
        assert refunds == ["16.500000", "5.000000"] and agent_id
        assert all(r["job_id"] == order_id for r in receipts if r["status"] == "refund")
        validate_exchanges(merchant)
        assert await ledger_problems() == []


async def test_events_delivered_at_once_never_move_an_order_back(kernel_factory, merchant):
    """A merchant's outbox sends order_create and order_update on their own schedules, so they
    can arrive together: whatever the interleaving, the later status stays."""
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        await configure(client, merchant, webhook_secret=SECRET)
        _, _, job = await bought_mug(kernel, client)
        session_id = job["result"]["result"]["checkout_session_id"]
        path = "/v1/commerce/merchants/shop/order-events"
        confirmed, fulfilled = _event(session_id, "confirmed"), _event(session_id, "fulfilled")
        for _ in range(8):
            await Order.update({Order.order_status: None}).where(Order.id == job["request_id"])
            answers = await asyncio.gather(
                *(client.post(path, content=raw, headers=_signed(raw)) for raw in (confirmed, fulfilled) * 3)
            )
            assert [a.status_code for a in answers] == [200] * 6
            order = await Order.select(Order.order_status).where(Order.id == job["request_id"]).first()
            assert order["order_status"] == "fulfilled"
