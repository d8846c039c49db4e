"""Orders that do not end in a delivery, and the seller's key, on SQLite and PostgreSQL: an
order past its deadline is refunded and the seller can no longer fulfil it; a declined
order is refunded; a disabled service, an unknown one and a changed price are refused
before payment; the same purchase retried concurrently with one Idempotency-Key is charged
once; the soul key is shown once, stored only hashed, and a wrong key gets 401."""

from __future__ import annotations

import asyncio
import json

import msgspec
from eth_account import Account
from souls_support import ENV, LINGUA, PLUGIN, finished, parked, post_with_proof, register, soul_auth

from tollway import now_ms
from tollway.testing import count_quotes, credits_session, http_client, ledger_problems, worker_for
from tollway_souls import orders
from tollway_souls.tables import SoulAgent, SoulOrder

BUY = {"soul": "lingua", "service": "proofread", "price_usdc": "0.40", "request": {"text": "Je suis"}, "deadline_s": 60}


async def _receipt(client, headers, job_id):
    (receipt,) = [
        r
        for r in (await client.get("/v1/analytics/receipts", headers=headers)).json()["receipts"]
        if r["job_id"] == job_id
    ]
    return receipt


async def test_an_unfulfilled_order_is_refunded_at_its_deadline(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            key = (await register(client, Account.create(), LINGUA)).json()["soul_key"]
            _buyer, auth = await credits_session(client, "1")
            accepted = await client.post("/v1/tools/souls/buy", json=BUY, headers=auth)
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["request_id"]
            assert (await client.get("/v1/balance", headers=auth)).json()["credits_balance"] == "0.600000"
            await parked(client, job_id, auth)
            assert await orders.expire_due(kernel.platform, now_ms()) == 0  # not yet due
            assert await orders.expire_due(kernel.platform, now_ms() + 61_000) == 1
            assert await orders.expire_due(kernel.platform, now_ms() + 61_000) == 0  # an order ends once
            job = await finished(client, job_id, auth)
            late = await client.post(
                f"/v1/soul/orders/{job_id}/fulfil", json={"result": {"text": "I am"}}, headers=soul_auth(key)
            )
            receipt = await _receipt(client, auth, job_id)
            balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
            earnings = (await client.get("/v1/soul/earnings", headers=soul_auth(key))).json()
    finally:
        await worker.stop()
    assert job["status"] == "failed" and job["error_code"] == "provider_unavailable"
    assert late.status_code == 409 and late.json()["state"] == "expired"
    assert receipt["status"] == "refunded" and receipt["revision"] == 2 and balance == "1.000000"
    assert earnings["earned_usdc"] == "0.000000" and earnings["credits_balance"] == "0.000000"
    assert await ledger_problems() == []


async def test_a_declined_order_is_refunded_and_the_deadline_cannot_end_it_again(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    async with http_client(kernel) as client:  # no worker: the seller answers before any worker ran the job
        key = (await register(client, Account.create(), LINGUA)).json()["soul_key"]
        _buyer, auth = await credits_session(client, "1")
        job_id = (await client.post("/v1/tools/souls/buy", json=BUY, headers=auth)).json()["request_id"]
        declined = await client.post(
            f"/v1/soul/orders/{job_id}/decline", json={"reason": "Not my language."}, headers=soul_auth(key)
        )
        assert await orders.expire_due(kernel.platform, now_ms() + 61_000) == 0
        # what a seller outside soul_buy (tollway_commerce) asks: the state and note by order id
        assert await orders.order_states([job_id, "req_unknown"]) == {
            job_id: {"state": "declined", "note": "Not my language."}
        }
        assert await orders.order_states([]) == {}
        job = (await client.get(f"/v1/requests/{job_id}", headers=auth)).json()
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
    assert (
        declined.status_code == 200
        and declined.json()["state"] == "declined"
        and declined.json()["note"] == "Not my language."
    )
    assert job["status"] == "failed" and "Not my language." in job["error"]
    assert balance == "1.000000"
    assert await ledger_problems() == []


async def test_what_cannot_be_bought_is_refused_before_payment(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    async with http_client(kernel) as client:
        key = (await register(client, Account.create(), LINGUA)).json()["soul_key"]
        _buyer, auth = await credits_session(client, "5")
        off = await client.patch("/v1/soul/services/proofread", json={"enabled": False}, headers=soul_auth(key))
        assert off.status_code == 200 and off.json()["enabled"] is False
        quotes = await count_quotes(kernel)
        disabled = await client.post("/v1/tools/souls/buy", json=BUY, headers=auth)
        unpaid = await client.post("/v1/tools/souls/buy", json=BUY)  # not even a quote
        unknown = await client.post("/v1/tools/souls/buy", json={**BUY, "service": "poetry"}, headers=auth)
        nobody = await client.post("/v1/tools/souls/buy", json={**BUY, "soul": "nobody"}, headers=auth)
        changed = await client.post(
            "/v1/tools/souls/buy", json={**BUY, "service": "translate", "price_usdc": "1.00"}, headers=auth
        )
        bad = await client.post(
            "/v1/tools/souls/buy",
            json={"soul": "Lingua!", "service": "", "price_usdc": "0", "deadline_s": 5},
            headers=auth,
        )
        public = (await client.get("/v1/souls/lingua")).json()
        mine = (await client.get("/v1/soul/dashboard", headers=soul_auth(key))).json()
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        assert await count_quotes(kernel) == quotes
    assert disabled.status_code == 409 and disabled.json()["error"] == "service_disabled"
    assert unpaid.status_code == 409
    assert unknown.status_code == 404 and nobody.status_code == 404
    assert (
        changed.status_code == 409
        and changed.json()["error"] == "price_changed"
        and changed.json()["price_usdc"] == "1.250000"
    )
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} >= {"soul", "service", "deadline_s"}
    assert [s["slug"] for s in public["services"]] == ["translate"] and public["soul_price_usdc"] == "1.250000"
    assert [s["slug"] for s in mine["services"]] == ["translate", "proofread"]
    assert balance == "5.000000"


async def test_one_purchase_retried_concurrently_is_charged_once(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    async with http_client(kernel) as client:
        await register(client, Account.create(), LINGUA)
        _buyer, auth = await credits_session(client, "2")
        keyed = {**auth, "Idempotency-Key": "order-7"}
        answers = await asyncio.gather(
            *[client.post("/v1/tools/souls/buy", json=BUY, headers=keyed) for _ in range(10)]
        )
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        receipts = (await client.get("/v1/analytics/receipts", headers=auth)).json()["receipts"]
    accepted = {a.json()["request_id"] for a in answers if a.status_code == 202}
    assert len(accepted) == 1, [a.status_code for a in answers]
    assert all(a.status_code in (202, 409) for a in answers)  # 409: the same key still running
    assert balance == "1.600000" and len(receipts) == 1
    assert len(await SoulOrder.select(SoulOrder.id)) == 1
    assert await ledger_problems() == []


async def test_the_soul_key_is_shown_once_and_a_wrong_one_is_refused(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    seller = Account.create()
    async with http_client(kernel) as client:
        first = await register(client, seller, LINGUA)
        key = first.json()["soul_key"]
        twice = await register(client, seller, {**LINGUA, "slug": "lingua-two"})
        taken = await register(client, Account.create(), LINGUA)
        reads = [
            await client.get("/v1/souls"),
            await client.get("/v1/souls/lingua"),
            await client.get("/v1/souls/search", params={"q": "lingua"}),
            await client.get("/v1/soul/dashboard", headers=soul_auth(key)),
            await client.get("/v1/soul/webhook", headers=soul_auth(key)),
            await client.get("/v1/souls/lingua/profile"),
        ]
        wrong = [
            await client.get("/v1/soul/dashboard", headers=soul_auth(key[:-2] + "xx")),
            await client.get("/v1/soul/orders", headers=soul_auth("soul_nothing")),
            await client.get("/v1/soul/earnings"),
            await client.post("/v1/soul/payouts", json={"amount_usdc": "1"}, headers=soul_auth(key + "0")),
        ]
        stored = await SoulAgent.select()
    assert first.status_code == 201 and twice.status_code == 409 and taken.status_code == 409
    assert all(r.status_code == 200 for r in reads), [r.status_code for r in reads]
    assert not any(key in r.text for r in reads)
    assert not any(key in json.dumps(row, default=str) for row in stored)
    assert all(w.status_code == 401 and w.json()["error"] == "invalid_soul_key" for w in wrong)
    page = reads[-1]
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text and 'href="javascript:' not in page.text
    assert (
        "<img src='https://example.com/lingua.png?size=96&#x27; onerror=&#x27;alert(3)'" in page.text
    )  # quotes cannot end the attribute
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert msgspec.json.decode(first.content)["soul_agent"]["services"][0]["price_usdc"] == "1.250000"


async def test_only_a_buyer_who_received_the_service_rates_it(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    buyer = Account.create()
    async with http_client(kernel) as client:
        await register(client, Account.create(), LINGUA)
        early = await post_with_proof(client, buyer, "/v1/souls/lingua/ratings", {"service": "translate", "stars": 5})
        bad = await post_with_proof(
            client, buyer, "/v1/souls/lingua/ratings", {"service": "translate", "stars": 6, "comment": "x" * 1001}
        )
        anonymous = await client.post("/v1/souls/lingua/ratings", json={"service": "translate", "stars": 5})
    assert early.status_code == 403 and early.json()["error"] == "no_completed_purchase"
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} == {"stars", "comment"}
    assert anonymous.status_code == 401


async def test_a_payout_the_service_wallet_cannot_cover_withdraws_nothing(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    seller = Account.create()
    async with http_client(kernel) as client:
        key = (await register(client, seller, LINGUA)).json()["soul_key"]
        seller_id = (await client.get("/v1/balance", headers={"X-Agent-ID": seller.address})).json()
        # a sale paid with credits: the seller earns its share, and no USDC reaches the service's wallet
        _buyer, auth = await credits_session(client, "1")
        job_id = (await client.post("/v1/tools/souls/buy", json=BUY, headers=auth)).json()["request_id"]
        assert (
            await client.post(
                f"/v1/soul/orders/{job_id}/fulfil", json={"result": {"text": "I am"}}, headers=soul_auth(key)
            )
        ).status_code == 200
        agent = await SoulAgent.select(SoulAgent.agent_id).where(SoulAgent.slug == "lingua").first()
        granted = await client.post(
            "/v1/tools/internal/credits/grant",
            json={"agent_id": agent["agent_id"], "amount": "2"},
            headers={"Authorization": "Bearer test-operator-token"},
        )
        assert granted.status_code == 200
        beyond = await client.post(
            "/v1/soul/payouts", json={"amount_usdc": "1.5"}, headers=soul_auth(key)
        )  # granted credits never leave
        failed = await client.post(
            "/v1/soul/payouts", json={"amount_usdc": "0.32"}, headers=soul_auth(key)
        )  # the share: earned
        bad = await client.post(
            "/v1/soul/payouts", json={"amount_usdc": "-1", "to_address": "0x12"}, headers=soul_auth(key)
        )
        listed = (await client.get("/v1/soul/payouts", headers=soul_auth(key))).json()
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": seller.address})).json()
    assert seller_id["credits_balance"] == "0.000000"
    assert (
        beyond.status_code == 409
        and beyond.json()["error"] == "exceeds_earnings"
        and beyond.json()["withdrawable_usdc"] == "0.320000"
    )
    assert failed.status_code == 503 and failed.json()["error"] == "payout_failed"
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} == {"amount_usdc", "to_address"}
    assert listed == {"payouts": [], "count": 0}
    assert balance["credits_balance"] == "2.320000" and balance["on_chain_balance"] == "0.000000"
    assert await ledger_problems() == []
