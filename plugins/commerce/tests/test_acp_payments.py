"""Money through the local Stripe, on SQLite and PostgreSQL: declines, 3-D Secure (the
session's `authentication_required` path), no PSP configured, 50 concurrent completes of one
session, byte-for-byte replays, a PSP error never kept against the key, a soul service sold
with its seller's share and the fee on the receipt."""

from __future__ import annotations

import asyncio
import json
import uuid

from acp_schemas import validate
from commerce_support import OPERATOR, AcpClient, issue_token, merchant, register_agent, stripe_standin
from eth_account import Account

from tollway import storage
from tollway.testing import http_client, ledger_problems, proof_headers

AUTHENTICATED = {
    "outcome": "authenticated",
    "outcome_details": {
        "three_ds_cryptogram": "AbCdEfGhIjKlMnOpQrStUvWxY0=",
        "electronic_commerce_indicator": "05",
        "transaction_id": "dsTransId_abc123",
        "version": "2.2.0",
    },
}


async def _count(table: str) -> int:
    return int((await storage.row(f"SELECT COUNT(*) AS n FROM {table}"))["n"])  # noqa: S608 - a test's fixed names


async def test_a_declined_card_leaves_the_session_ready_and_another_token_pays(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        session = await acp.create("credits_5usd")
        declined = await acp.complete(session["id"], stripe.grant("pm_card_chargeDeclinedInsufficientFunds"))
        assert declined.status_code == 402
        assert declined.json()["code"] == "payment_declined" and "insufficient_funds" in declined.json()["message"]
        state = (await acp.get(f"/v1/checkout_sessions/{session['id']}")).json()
        assert state["status"] == "ready_for_payment"
        assert state["messages"][0]["code"] == "payment_declined"
        paid = await acp.complete(session["id"], stripe.grant())
        assert paid.status_code == 200 and paid.json()["status"] == "completed"
        assert len(stripe.succeeded()) == 1 and await _count("commerce_orders") == 1
        assert await ledger_problems() == []


async def test_3ds_goes_through_authentication_required(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        session = await acp.create("credits_20usd")
        token = stripe.grant("pm_card_authenticationRequired")
        asked = await acp.complete(session["id"], token)
        assert asked.status_code == 402 and asked.json()["code"] == "requires_3ds"
        state = (await acp.get(f"/v1/checkout_sessions/{session['id']}")).json()
        assert state["status"] == "authentication_required"
        assert state["authentication_metadata"]["directory_server"] == "visa"
        without = await acp.complete(session["id"], token)
        assert without.status_code == 400
        assert without.json() == {
            "type": "invalid_request",
            "code": "requires_3ds",
            "message": "This checkout session requires issuer authentication. The request must include 'authentication_result'.",
            "param": "$.authentication_result",
        }
        done = await acp.complete(session["id"], token, authentication_result=AUTHENTICATED)
        assert done.status_code == 200 and done.json()["status"] == "completed"
        assert len(stripe.intents) == 1 and len(stripe.succeeded()) == 1  # the same PaymentIntent, confirmed
        confirm = [form for _m, path, form in stripe.requests if path.endswith("/confirm")]
        assert (
            confirm[0]["payment_method_options[card][three_d_secure][cryptogram]"]
            == AUTHENTICATED["outcome_details"]["three_ds_cryptogram"]
        )
        assert await ledger_problems() == []


async def test_without_a_psp_checkout_answers_503_before_anything_is_created(kernel_factory) -> None:
    async with merchant(kernel_factory, None) as (_k, _client, acp, _agent):
        body = {"line_items": [{"id": "credits_5usd"}], "currency": "usd", "capabilities": {}}
        answer = await acp.post("/v1/checkout_sessions", body, key="no-psp")
        assert answer.status_code == 503
        assert answer.json()["type"] == "service_unavailable" and answer.json()["code"] == "provider_unavailable"
        assert "TOLLWAY_PSP" in answer.json()["message"]
        assert await _count("commerce_sessions") == 0
        assert await _count("commerce_idempotency") == 0  # a 5xx is never kept


async def test_fifty_concurrent_completes_charge_once(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, agent):
        session = await acp.create("credits_5usd")
        token = stripe.grant()
        answers = await asyncio.gather(*(acp.complete(session["id"], token) for _ in range(50)))
        statuses = sorted({a.status_code for a in answers})
        assert 200 in statuses and set(statuses) <= {200, 409}, statuses
        winners = [a for a in answers if a.status_code == 200]
        orders = {a.json()["order"]["id"] for a in winners}
        assert len(orders) == 1
        assert len(stripe.succeeded()) == 1 and len(stripe.intents) == 1
        assert await _count("commerce_orders") == 1
        receipts = await storage.rows("SELECT receipt_id FROM tw_receipts WHERE job_id = {}", session["id"])
        assert len(receipts) == 1
        balance = await storage.row("SELECT credits FROM tw_agents WHERE id = {}", agent)
        assert int(balance["credits"]) == 5_000_000
        assert await ledger_problems() == []


async def test_a_replay_answers_the_first_response_byte_for_byte(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, client, acp, _agent):
        body = {"line_items": [{"id": "credits_5usd"}], "currency": "usd", "capabilities": {}}
        first = await acp.post("/v1/checkout_sessions", body, key="replay-1")
        # the same body with its keys in another order is the same request (RFC §6.2)
        reordered = json.dumps({"capabilities": {}, "currency": "usd", "line_items": [{"id": "credits_5usd"}]}).encode()
        again = await client.post(
            "/v1/checkout_sessions", content=reordered, headers=acp.headers(reordered, key="replay-1")
        )
        assert again.status_code == first.status_code == 201
        assert again.content == first.content
        assert again.headers["idempotent-replayed"] == "true" and again.headers["idempotency-key"] == "replay-1"
        assert await _count("commerce_sessions") == 1
        session = first.json()["id"]
        token = stripe.grant()
        done = await acp.complete(session, token, key="replay-2")
        done_again = await acp.complete(session, token, key="replay-2")
        assert done_again.content == done.content and done_again.status_code == 200
        # another key after the completion: the completed session again, nothing charged
        other_key = await acp.complete(session, stripe.grant(), key="replay-3")
        assert other_key.status_code == 200 and other_key.json()["order"] == done.json()["order"]
        assert len(stripe.succeeded()) == 1 and len(stripe.intents) == 1
        # the same key on another path is another request
        other = await acp.post(f"/v1/checkout_sessions/{session}/cancel", {}, key="replay-1")
        assert other.status_code == 405


async def test_a_psp_error_is_not_kept_and_the_retry_finishes_the_same_payment(kernel_factory) -> None:
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, env={"TOLLWAY_COMMERCE_IN_FLIGHT_S": "1"}) as (_k, _client, acp, _agent),
    ):
        session = await acp.create("credits_5usd")
        token = stripe.grant()
        stripe.failures = 10  # more than the library's own retries
        failed = await acp.complete(session["id"], token, key="psp-down")
        assert failed.status_code == 503 and failed.json()["type"] == "service_unavailable"
        assert (await acp.get(f"/v1/checkout_sessions/{session['id']}")).json()["status"] == "complete_in_progress"
        stripe.failures = 0
        await asyncio.sleep(1.1)  # past TOLLWAY_COMMERCE_IN_FLIGHT_S: the retry resumes the attempt
        retried = await acp.complete(session["id"], token, key="psp-down")
        assert retried.status_code == 200 and retried.json()["status"] == "completed"
        assert len(stripe.succeeded()) == 1
        assert await ledger_problems() == []


async def test_a_soul_service_pays_its_seller_the_share_and_puts_the_fee_on_the_receipt(kernel_factory) -> None:
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed={"tollway_souls"}) as (
            _k,
            client,
            acp,
            agent,
        ),
    ):
        seller = Account.create()
        soul = {
            "slug": "quick",
            "name": "Quick",
            "category": "data",
            "services": [{"slug": "answer", "title": "An answer", "price_usdc": "2.50", "category": "data"}],
        }
        raw = json.dumps(soul).encode()
        headers = {
            **proof_headers(seller, scope="write", method="POST", path="/v1/soul/register", body=raw),
            "content-type": "application/json",
        }
        registered = await client.post("/v1/soul/register", content=raw, headers=headers)
        assert registered.status_code in (200, 201), registered.text
        feed = (await client.get("/v1/commerce/feed/products")).json()
        ids = [p["id"] for p in feed["products"]]
        assert "soul:quick/answer" in ids and "credits_5usd" in ids
        session = await acp.create("soul:quick/answer")
        assert session["line_items"][0]["marketplace_seller_details"] == {"name": "Quick"}
        done = await acp.complete(session["id"], stripe.grant())
        assert done.status_code == 200, done.text
        rows = await storage.rows("SELECT agent_id, status, body FROM tw_receipts WHERE job_id = {}", session["id"])
        buyer = next(storage.loads(r["body"]) for r in rows if r["status"] == "settled")
        earned = next(storage.loads(r["body"]) for r in rows if r["status"] == "earned")
        assert buyer["category"] == "commerce" and buyer["amount_usdc"] == "2.500000"
        assert buyer["service_fee"] == "0.500000"  # TOLLWAY_SOULS_FEE_PERCENT's default 20 %
        assert earned["amount_usdc"] == "2.000000"
        assert buyer["agent_id"] == agent
        assert await ledger_problems() == []
        mixed = await acp.create("soul:quick/answer", "credits_5usd")
        assert mixed["status"] == "not_ready_for_payment" and mixed["messages"][0]["code"] == "unsupported"


async def test_a_customer_id_names_the_agent_credited(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, client, acp, platform_agent):
        agent = await register_agent(client)
        session = await acp.create("credits_5usd", buyer={"email": "a@example.com", "customer_id": agent})
        assert (await acp.complete(session["id"], stripe.grant())).status_code == 200
        credits = {
            r["id"]: int(r["credits"])
            for r in await storage.rows("SELECT id, credits FROM tw_agents WHERE id IN ({}, {})", agent, platform_agent)
        }
        assert credits == {agent: 5_000_000, platform_agent: 0}
        unknown = await acp.create("credits_5usd", buyer={"email": "a@example.com", "customer_id": str(uuid.uuid4())})
        assert unknown["status"] == "not_ready_for_payment"
        validate("CheckoutSession", unknown)
        assert unknown["messages"][0]["param"] == "$.buyer.customer_id"
        # a session is the platform's own: another platform's token does not see it
        other = await issue_token(client, agent, platform="other")
        stranger = AcpClient(client, other["token"])
        assert (await stranger.get(f"/v1/checkout_sessions/{session['id']}")).status_code == 404
        assert (await client.get("/v1/commerce/feed", headers=OPERATOR)).json()["id"] == "tollway"


async def test_the_operator_token_is_needed_to_issue_acp_tokens(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_commerce"})
    async with http_client(kernel) as client:
        answer = await client.post("/v1/tools/internal/acp-tokens", json={"platform": "x", "agent_id": "a"})
        assert answer.status_code == 401


async def test_a_key_past_its_retention_is_a_new_request(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        body = {"line_items": [{"id": "credits_5usd"}], "currency": "usd", "capabilities": {}}
        first = await acp.post("/v1/checkout_sessions", body, key="old-key")
        assert (await acp.post("/v1/checkout_sessions", {**body, "locale": "fr-FR"}, key="old-key")).status_code == 422
        kept = await storage.row("SELECT created_ms FROM commerce_idempotency")
        # 24 hours and a second later (TOLLWAY_COMMERCE_IDEMPOTENCY_TTL_S: never less than a day)
        await storage.execute("UPDATE commerce_idempotency SET created_ms = {}", int(kept["created_ms"]) - 86_401_000)
        again = await acp.post("/v1/checkout_sessions", {**body, "locale": "fr-FR"}, key="old-key")
        assert again.status_code == 201 and again.json()["id"] != first.json()["id"]


async def test_expired_and_canceled_sessions_cannot_be_completed(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        late = await acp.create("credits_5usd")
        await storage.execute("UPDATE commerce_sessions SET expires_ms = {} WHERE id = {}", 1, late["id"])
        assert (await acp.get(f"/v1/checkout_sessions/{late['id']}")).json()["status"] == "expired"
        refused = await acp.complete(late["id"], stripe.grant())
        assert refused.status_code == 409 and refused.json()["code"] == "invalid_state"
        gone = await acp.create("credits_5usd")
        await acp.post(f"/v1/checkout_sessions/{gone['id']}/cancel", {})
        assert (await acp.complete(gone["id"], stripe.grant())).status_code == 409
        assert stripe.intents == {}  # nothing was asked of the PSP


async def test_the_ledger_check_sees_credits_bought_twice(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, agent):
        session = await acp.create("credits_5usd")
        assert (await acp.complete(session["id"], stripe.grant())).status_code == 200
        assert await ledger_problems() == []
        row = await storage.row("SELECT * FROM tw_ledger WHERE kind = {}", "outside_sale_credit")
        await storage.execute(
            "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
            "VALUES ({}, {}, {}, {}, {}, {}, {}, {})",
            "txn_forged",
            row["account"],
            row["delta"],
            row["balance_after"],
            row["kind"],
            row["reference"],
            row["memo"],
            row["created_ms"],
        )
        problems = await ledger_problems()
        assert any("credited 2 times" in p for p in problems), problems
        assert agent in row["account"]
