"""The marketplace's operator page (the console's Marketplace) on SQLite and PostgreSQL, seeded
through the service on the local network: two souls listed, a purchase paid with x402 and
fulfilled, then withdrawn on-chain by the seller; one paid with credits and declined, one left
open. The report's souls, orders by state, latest orders and payouts are those figures, and
no soul key, webhook secret, nor what a buyer asked or got, is in it."""

from __future__ import annotations

from typing import Any

import msgspec
from eth_account import Account
from souls_support import ENV, LINGUA, OPERATOR, PLUGIN, register, soul_auth

from tollway import Link, Report
from tollway.testing import credits_session, http_client, paid_with_x402
from tollway_souls.tables import SoulAgent

TRANSLATE = {"soul": "lingua", "service": "translate", "price_usdc": "1.25", "request": {"text": "private-request"}}
PROOFREAD = {"soul": "lingua", "service": "proofread", "price_usdc": "0.40", "request": {"text": "Je suis"}}
QUILL = {  # a second soul, with one service
    **LINGUA,
    "slug": "quill",
    "name": "Quill",
    "display_name": "Quill, the copywriter",
    "services": [{**LINGUA["services"][0], "slug": "tagline", "title": "A tagline", "price_usdc": "2"}],
}


def rows(report: Report, heading: str) -> list[tuple[Any, ...]]:
    table = next(s for s in report.sections if s.heading == heading).table
    return [tuple(c.text if isinstance(c, Link) else c for c in r.cells) for r in table.rows]


async def test_the_marketplace_page_reports_souls_orders_and_payouts(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    seller, buyer = Account.create(), Account.create()
    async with http_client(kernel) as client:
        listed = (await register(client, seller, LINGUA)).json()
        key = listed["soul_key"]
        seller_agent = (await SoulAgent.select(SoulAgent.agent_id).where(SoulAgent.slug == "lingua").first())[
            "agent_id"
        ]
        await client.post(
            "/v1/tools/internal/chain/fund", json={"address": buyer.address, "amount": "5"}, headers=OPERATOR
        )
        sold = (await paid_with_x402(client, buyer, "/v1/tools/souls/buy", TRANSLATE)).json()["request_id"]
        done = await client.post(
            f"/v1/soul/orders/{sold}/fulfil", json={"result": {"text": "private-result"}}, headers=soul_auth(key)
        )
        assert done.status_code == 200, done.text
        payout = await client.post("/v1/soul/payouts", json={"amount_usdc": "1"}, headers=soul_auth(key))
        assert payout.status_code == 201 and payout.json()["status"] == "paid", payout.text
        credits_buyer, auth = await credits_session(client, "2")
        declined = (await client.post("/v1/tools/souls/buy", json=PROOFREAD, headers=auth)).json()["request_id"]
        await client.post(f"/v1/soul/orders/{declined}/decline", json={"reason": "No."}, headers=soul_auth(key))
        left_open = (await client.post("/v1/tools/souls/buy", json=PROOFREAD, headers=auth)).json()["request_id"]
        quill_key = (await register(client, Account.create(), QUILL)).json()["soul_key"]
        webhook = (await client.get("/v1/soul/webhook", headers=soul_auth(key))).json().get("secret") or "no-secret"
        [page] = [p for p in kernel.platform.operator_pages() if p.name == "marketplace"]
        report = await page.load(kernel.platform, {}, None)
        item = await page.load(kernel.platform, {}, "anything")
    assert page.title == "Marketplace" and item is None
    summary = {f.label: f.value for f in report.sections[0].figures}
    assert summary == {"Souls listed": 2, "Services on sale": 3}
    souls = rows(report, "The latest 50 souls")
    assert [s[0] for s in souls] == ["quill", "lingua"]  # newest first
    assert souls[1][2] == seller_agent and souls[1][3].lower() == seller.address.lower()
    assert souls[1][4:8] == (2, "0.400000", 1, "1.000000") and souls[0][4:8] == (1, "2.000000", 0, "0.000000")
    assert rows(report, "Orders by state") == [
        ("declined", 1, "0.400000", "0.320000", "0.080000"),
        ("fulfilled", 1, "1.250000", "1.000000", "0.250000"),
        ("open", 1, "0.400000", "0.320000", "0.080000"),
    ]
    orders = rows(report, "The latest 50 orders")
    assert [o[0] for o in orders] == [left_open, declined, sold]
    assert orders[2][1:3] == ("lingua", "Translation to French")
    assert orders[2][4:7] == ("fulfilled", "1.250000", "1.000000")
    assert orders[0][3] == credits_buyer and orders[0][4] == "open"
    first_order = next(s for s in report.sections if s.heading == "The latest 50 orders").table.rows[0].cells[0]
    assert first_order == Link(left_open, f"/console/jobs/{left_open}")
    assert rows(report, "Payouts by state") == [("paid", 1, "1.000000")]
    [paid_out] = rows(report, "The latest 50 payouts")
    assert paid_out[1] == seller_agent and paid_out[2].lower() == seller.address.lower()
    assert paid_out[3:5] == ("1.000000", "paid") and paid_out[5].startswith("0x")
    text = msgspec.json.encode(report).decode()
    for private in (key, quill_key, webhook, "private-request", "private-result", "Je suis"):
        assert private not in text
