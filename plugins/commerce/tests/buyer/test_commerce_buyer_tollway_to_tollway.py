"""A Tollway instance buys from a second Tollway instance acting as the ACP merchant, over real
HTTP both ways: the seller is `tollway serve` in a subprocess (its own home and SQLite
database, the commerce plugin's checkout routes, its Stripe psp pointed at a local Stripe);
the buyer is this test's service (SQLite or PostgreSQL), served for real so the seller's order
webhooks reach it. The operator gives the buyer the seller's origin alone: its ACP discovery
document says the rest. The buyer reads the seller's product feed, an agent searches and buys a
credit pack with commerce_buy paid from its credits; the buyer mints a Shared Payment Token
with the real Stripe provider, the seller charges it once on a PaymentIntent, and its signed
order event updates the buyer's order and notifies the agent. Then the seller's operator
refunds part of the order through the seller's refund route: Stripe refunds it, the seller's
signed order_update carries the refund, and the buyer credits its agent the USDC equivalent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp_schemas import validate_exchange
from buyer_support import buy_body
from commerce_support import stripe_standin
from stripe_standin import SECRET_KEY

from tollway import to_micro
from tollway.testing import (
    OPERATOR,
    credits_session,
    http_client,
    ledger_problems,
    serve_http,
    wait_for_job,
    worker_for,
)
from tollway_commerce.buyer.tables import Order

TOLLWAY = str(Path(sys.executable).parent / "tollway")


@pytest.fixture(autouse=True)
def stripe_config_in_tmp(tmp_path, monkeypatch):
    """The stripe library keeps a telemetry id under $XDG_CONFIG_HOME/stripe (else ~/.config):
    in the test's temporary folder, never the user's home (tests/support/boundary.py)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


SIGNING_KEY = "a-signing-key-both-sides-share"


class ValidatingTransport(httpx.AsyncBaseTransport):
    """The buyer service's HTTP transport: real HTTP, and every ACP checkout request it sends
    and answer it gets validated against the 2026-01-30 JSON Schemas (kept in `checked`)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.checked: list[tuple[str, str, int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if "/checkout_sessions" not in request.url.path:
            return response
        raw = await response.aread()
        body = json.loads(request.content) if request.content else None
        validate_exchange(request.method, request.url.path, body, response.status_code, json.loads(raw))
        self.checked.append((request.method, request.url.path, response.status_code))
        return httpx.Response(response.status_code, headers=response.headers, content=raw, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def seller_process(home: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """`tollway serve` on a free port with its own home; its base URL once /healthz answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOLLWAY_") or k == "TOLLWAY_DOTENV"}
    base.update(
        TOLLWAY_HOME=str(home),
        TOLLWAY_DATABASE_URL=f"sqlite:///{home / 'tollway.db'}",
        TOLLWAY_NETWORK="local",
        TOLLWAY_OPERATOR_TOKEN="test-operator-token",
        TOLLWAY_OFFLINE="1",
        TOLLWAY_WEBHOOKS_ALLOW_INSECURE="1",
        # a delivery the buyer could not take yet (its order row not written) is sent again
        # after 1, 2, 4 ... s, not 10, 20, 40 s: a loaded machine's slow first answer costs seconds
        TOLLWAY_WEBHOOK_RETRY_BASE_S="1",
        TOLLWAY_COMMERCE_PUBLIC_URL=url,
        **env,
    )
    proc = await asyncio.create_subprocess_exec(
        TOLLWAY,
        "serve",
        "--port",
        str(port),
        env=base,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(1200):  # 120 s: a loaded machine starts it slowly
                if proc.returncode is not None:
                    raise RuntimeError(
                        f"the seller exited {proc.returncode}: {(await proc.stderr.read()).decode()[-3000:]}"
                    )
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(f"{url}/healthz", timeout=2)).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError("the seller did not start")
        yield url
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _order_event(order_id: str, status: str) -> dict[str, Any]:
    """The order once a merchant's event set it to `status` (an event also sets its refunds, [] when none)."""
    row: dict[str, Any] = {}
    for _ in range(1200):  # 120 s: the seller's outbox sends a failed delivery again after 1, 2, 4 ... s
        row = await Order.select().where(Order.id == order_id).first()
        if row["refunds"] is not None and row["order_status"] == status:
            return row
        await asyncio.sleep(0.1)
    raise AssertionError(f"no order event reached the order: {row}")


async def _refunds_reached(order_id: str, refunds: list[dict[str, Any]]) -> dict[str, Any]:
    """The order once a merchant's event set its refunds to `refunds`."""
    row: dict[str, Any] = {}
    for _ in range(1200):
        row = await Order.select().where(Order.id == order_id).first()
        if row["refunds"] is not None and json.loads(row["refunds"]) == refunds:
            return row
        await asyncio.sleep(0.1)
    raise AssertionError(f"the refund event did not reach the order: {row}")


async def test_a_tollway_buys_a_credit_pack_from_another_tollway(kernel_factory, tmp_path):
    transport = ValidatingTransport()
    async with stripe_standin() as stripe:
        buyer = await kernel_factory(
            installed={"tollway_commerce"},
            transport=transport,
            env={
                "TOLLWAY_PSP_STRIPE_SECRET_KEY": SECRET_KEY,
                "TOLLWAY_PSP_STRIPE_API_BASE": stripe.url,
                "TOLLWAY_PSP_STRIPE_PAYMENT_METHOD": "pm_card_visa",
                "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1",
            },
        )
        seller_env = {"TOLLWAY_PSP_STRIPE_SECRET_KEY": SECRET_KEY, "TOLLWAY_PSP_STRIPE_API_BASE": stripe.url}
        async with serve_http(buyer) as buyer_url, seller_process(tmp_path / "seller", seller_env) as seller_url:
            async with httpx.AsyncClient(base_url=seller_url) as seller:
                platform = (await seller.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
                issued = await seller.post(
                    "/v1/tools/internal/acp-tokens",
                    json={
                        "platform": "tollway-buyer",
                        "agent_id": platform["agent_id"],
                        "webhook_url": f"{buyer_url}/v1/commerce/merchants/tollway-seller/order-events",
                        "signing_key": SIGNING_KEY,
                    },
                    headers=OPERATOR,
                )
                assert issued.status_code == 201, issued.text
                token = issued.json()
            async with http_client(buyer) as client:
                merchant = {  # its origin alone: the API base, version and feed come from its discovery
                    "id": "tollway-seller",
                    "name": "Another Tollway",
                    "base_url": seller_url,
                    "acp_token": token["token"],
                    "signing_key": SIGNING_KEY,
                    "webhook_secret": token["webhook_secret"],
                }
                put = await client.post("/v1/tools/internal/merchants", json=merchant, headers=OPERATOR)
                assert put.status_code == 201, put.text
                found = put.json()
                assert (found["base_url"], found["feed_url"], found["api_version"]) == (
                    f"{seller_url}/v1",
                    f"{seller_url}/v1/commerce/feed",
                    "2026-01-30",
                )
                read = await client.post("/v1/tools/internal/merchants/tollway-seller/feed/read", headers=OPERATOR)
                assert read.status_code == 200, read.text
                _, auth = await credits_session(client, "50")
                found = await client.post(
                    "/v1/tools/commerce/search", json={"query": "credit", "max_price_usdc": "5"}, headers=auth
                )
                assert found.status_code == 200, found.text
                products = found.json()["data"]["result"]["products"]
                assert products and products[0]["price"]["currency"] == "usd", products
                pack = products[0]
                body = buy_body((pack["product_id"], 1), max_total="10", merchant_id="tollway-seller")
                accepted = await client.post("/v1/tools/commerce/buy", json=body, headers=auth)
                assert accepted.status_code == 202, accepted.text
                worker = worker_for(buyer)
                worker.start()
                try:
                    job = await wait_for_job(client, accepted.json()["request_id"], auth, every_s=0.1)
                finally:
                    await worker.stop()
                assert job["status"] == "completed", job
                order = job["result"]["result"]
                assert order["spent_usdc"] == pack["price"]["usdc"]
                assert order["returned_usdc"] == f"{10 - float(pack['price']['usdc']):.6f}"
                # the seller's signed order_create (confirmed), then order_update (fulfilled: credits are instant)
                row = await _order_event(job["request_id"], "fulfilled")
                notes = (await client.get("/v1/tools/notifications", headers=auth)).json()["notifications"]
                assert any(n["type"] == "commerce_order_updated" for n in notes)
                # the seller's operator refunds 2.00 of it; its order_update reaches the buyer, which credits its agent
                before = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
                async with httpx.AsyncClient(base_url=seller_url) as seller:
                    refunded = await seller.post(
                        f"/v1/tools/internal/commerce/orders/{order['merchant_order_id']}/refunds",
                        json={"amount": 200, "reason": "a partial refund"},
                        headers={**OPERATOR, "Idempotency-Key": "t2t-refund"},
                    )
                    assert refunded.status_code == 201, refunded.text
                    assert refunded.json()["status"] == "succeeded" and refunded.json()["refunded_total"] == 200
                refunded_row = await _refunds_reached(job["request_id"], [{"type": "original_payment", "amount": 200}])
                after = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
                assert to_micro(after) - to_micro(before) == 2_000_000  # 200 US cents at the purchase's 1:1
                notes = (await client.get("/v1/tools/notifications", headers=auth)).json()["notifications"]
                (credited,) = [n for n in notes if n["type"] == "commerce_refund_credited"]
                assert credited["metadata"]["credited_usdc"] == "2.000000"
        assert row["merchant_order_id"] == order["merchant_order_id"] == refunded_row["merchant_order_id"]
        assert [r["amount"] for r in stripe.refunds] == [200]
        charged = stripe.succeeded()
        assert len(charged) == 1 and charged[0]["amount"] == pack["price"]["amount"]
        assert len(stripe.issued) == 1  # one Shared Payment Token, minted by the buyer
        issued_token = next(iter(stripe.issued.values()))
        assert issued_token["usage_limits"]["max_amount"] == pack["price"]["amount"]
        assert issued_token["shared_metadata"]["checkout_session_id"] == order["checkout_session_id"]
        assert await ledger_problems() == []
    # create (201) and complete (200): the seller selected its one digital option itself
    assert [(m, s) for m, _, s in transport.checked] == [("POST", 201), ("POST", 200)], transport.checked


async def test_a_stripe_psp_without_a_card_to_buy_with_refuses_before_payment(kernel_factory, merchant):
    from buyer_support import buy_body, configure

    from tollway.testing import count_receipts

    async with stripe_standin() as stripe:
        kernel = await kernel_factory(
            installed={"tollway_commerce"},
            env={"TOLLWAY_PSP_STRIPE_SECRET_KEY": SECRET_KEY, "TOLLWAY_PSP_STRIPE_API_BASE": stripe.url},
        )
        async with http_client(kernel) as client:
            await configure(client, merchant)
            _, auth = await credits_session(client, "100")
            receipts = await count_receipts()
            refused = await client.post(
                "/v1/tools/commerce/buy", json=buy_body(("mug", 1), max_total="50"), headers=auth
            )
            assert refused.status_code == 503, refused.text
            assert "TOLLWAY_PSP_STRIPE_PAYMENT_METHOD" in refused.json()["message"]
            assert await count_receipts() == receipts
    assert stripe.issued == {} and merchant.sessions == {}
