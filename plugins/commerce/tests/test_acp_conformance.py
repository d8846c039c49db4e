"""The conformance checklist of `rfc.agentic_checkout.md` (§10), one named test per line, on
SQLite and PostgreSQL; every request and answer validated against the 2026-01-30 schemas
by the ACP client (`commerce_support.AcpClient`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acp_schemas import validate, version_error
from commerce_support import OPERATOR, VERSION, merchant, stripe_standin

from tollway.testing import webhook_receiver
from tollway_commerce.acp import signing

ADDRESS = {
    "name": "Ada Agent",
    "line_one": "1 Protocol Way",
    "city": "San Francisco",
    "state": "CA",
    "country": "US",
    "postal_code": "94131",
}


def _amounts(value: Any, path: str = "$") -> list[tuple[str, Any]]:
    """Every money field of an answer: `amount`, `unit_amount`, `presentment_amount`."""
    out = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("amount", "unit_amount", "presentment_amount"):
                out.append((f"{path}.{key}", inner))
            out += _amounts(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += _amounts(inner, f"{path}[{i}]")
    return out


async def test_1_enforces_json_and_the_api_version(kernel_factory) -> None:
    """HTTPS is the operator's TLS front (docs/commerce.md); JSON and API-Version here: a
    missing or unsupported version is 400 naming the supported versions (RFC §2.1)."""
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, client, acp, _agent):
        body = json.dumps({"line_items": [{"id": "credits_5usd"}], "currency": "usd", "capabilities": {}})
        for version, code in ((None, "missing_api_version"), ("2025-09-29", "unsupported_api_version")):
            headers = acp.headers(body.encode())
            headers.pop("API-Version")
            if version:
                headers["API-Version"] = version
            answer = await client.post("/v1/checkout_sessions", content=body, headers=headers)
            assert answer.status_code == 400
            assert answer.headers["content-type"].startswith("application/json")
            version_error(answer.json())
            assert answer.json()["code"] == code
            assert answer.json()["supported_versions"] == [VERSION]
        created = await acp.create("credits_5usd")
        assert created["protocol"] == {"version": VERSION}


async def test_2_returns_the_authoritative_cart_state_on_every_response(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        created = await acp.create("credits_5usd")
        path = f"/v1/checkout_sessions/{created['id']}"
        updated = (await acp.post(path, {"line_items": [{"id": "credits_20usd"}]})).json()
        got = (await acp.get(path)).json()
        canceled = (await acp.post(path + "/cancel", {})).json()
        for state in (created, updated, got, canceled):
            validate("CheckoutSession", state)
            assert {"line_items", "totals", "fulfillment_options", "messages", "links", "capabilities"} <= set(state)
        assert got == updated and updated["totals"][-1] == {"type": "total", "display_text": "Total", "amount": 2000}
        assert canceled["status"] == "canceled"


async def test_3_uses_integer_minor_units_for_every_amount(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        created = await acp.create("credits_5usd", "credits_20usd")
        done = (await acp.complete(created["id"], stripe.grant())).json()
        amounts = _amounts(created) + _amounts(done)
        assert amounts and all(type(v) is int for _, v in amounts), amounts
        assert stripe.succeeded()[0]["amount"] == 2500  # cents at the PSP too


async def test_4_implements_create_update_retrieve_complete_and_cancel(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        first = await acp.create("credits_5usd")
        path = f"/v1/checkout_sessions/{first['id']}"
        assert (await acp.post(path, {"line_items": [{"id": "credits_100usd"}]})).status_code == 200
        assert (await acp.get(path)).json()["line_items"][0]["item"]["id"] == "credits_100usd"
        done = await acp.complete(first["id"], stripe.grant())
        assert done.status_code == 200 and done.json()["status"] == "completed"
        again = await acp.post(path + "/cancel", {})
        assert again.status_code == 405  # RFC §4.5: already completed
        second = await acp.create("credits_5usd")
        canceled = await acp.post(
            f"/v1/checkout_sessions/{second['id']}/cancel", {"intent_trace": {"reason_code": "comparison"}}
        )
        assert canceled.status_code == 200 and canceled.json()["status"] == "canceled"
        assert (await acp.post(f"/v1/checkout_sessions/{second['id']}/cancel", {})).status_code == 405
        assert (await acp.get("/v1/checkout_sessions/cs_nope")).status_code == 404


async def test_5_requires_an_idempotency_key_on_every_post_with_400_422_and_409(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, client, acp, _agent):
        body = {"line_items": [{"id": "credits_5usd"}], "currency": "usd", "capabilities": {}}
        raw = json.dumps(body).encode()
        headers = acp.headers(raw)
        headers.pop("Idempotency-Key")
        missing = await client.post("/v1/checkout_sessions", content=raw, headers=headers)
        assert missing.status_code == 400
        assert missing.json() == {
            "type": "invalid_request",
            "code": "idempotency_key_required",
            "message": "Idempotency-Key header is required on all POST requests",
        }
        first = await acp.post("/v1/checkout_sessions", body, key="k-5")
        other = await acp.post("/v1/checkout_sessions", {**body, "currency": "usd", "locale": "en-US"}, key="k-5")
        assert first.status_code == 201 and other.status_code == 422
        assert other.json()["code"] == "idempotency_conflict"
        # 409 while the first request with the key is in flight: a complete the PSP holds up
        session = first.json()["id"]
        token = stripe.grant()
        release = stripe.hold()
        slow = asyncio.create_task(acp.complete(session, token, key="k-5c"))
        await stripe.held.wait()
        in_flight = await acp.complete(session, token, key="k-5c")
        release.set()
        assert in_flight.status_code == 409 and in_flight.json()["code"] == "idempotency_in_flight"
        assert in_flight.headers["retry-after"] == "1"
        first_complete = await slow
        assert first_complete.status_code == 200
        replay = await acp.complete(session, token, key="k-5c")
        assert replay.status_code == 200 and replay.content == first_complete.content
        assert replay.headers["idempotent-replayed"] == "true"
        assert len(stripe.succeeded()) == 1


async def test_6_emits_flat_error_objects(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        bad = await acp.client.post(
            "/v1/checkout_sessions",
            content=b'{"line_items": [{"id": 5}], "currency": "usd", "capabilities": {}}',
            headers=acp.headers(b"x"),
        )
        assert bad.status_code == 400
        validate("Error", bad.json())
        assert bad.json()["type"] == "invalid_request" and bad.json()["param"] == "$.line_items[0].id"
        assert set(bad.json()) <= {"type", "code", "message", "param"}
        missing = await acp.get("/v1/checkout_sessions/cs_missing")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"


async def test_7_verifies_the_token_and_the_request_signature(kernel_factory) -> None:
    key = "platform-signing-key-0123456789"
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, signing_key=key) as (_k, client, acp, agent),
    ):
        assert (await acp.create("credits_5usd"))["status"] == "ready_for_payment"  # signed: accepted
        body = json.dumps({"line_items": [{"id": "credits_5usd"}], "currency": "usd", "capabilities": {}}).encode()
        cases = {
            "no token": {"API-Version": VERSION, "Idempotency-Key": "a"},
            "wrong token": {"Authorization": "Bearer acp_nope", "API-Version": VERSION, "Idempotency-Key": "b"},
            "unsigned": {**acp.headers(body), "Signature": ""},
            "wrong signature": {
                **acp.headers(body),
                "Signature": signing.request_signature("other-key-0123456789", "2026-01-30T00:00:00Z", body),
            },
            "stale": {
                **acp.headers(body),
                "Timestamp": "2020-01-01T00:00:00Z",
                "Signature": signing.request_signature(key, "2020-01-01T00:00:00Z", body),
            },
        }
        for name, headers in cases.items():
            answer = await client.post("/v1/checkout_sessions", content=body, headers=headers)
            assert answer.status_code == 401, name
            validate("Error", answer.json())
        token_id = (
            await client.post(
                "/v1/tools/internal/acp-tokens", json={"platform": "revoked", "agent_id": agent}, headers=OPERATOR
            )
        ).json()
        revoked = await client.delete(f"/v1/tools/internal/acp-tokens/{token_id['token_id']}", headers=OPERATOR)
        assert revoked.status_code == 200
        gone = await client.get(
            "/v1/checkout_sessions/cs_x",
            headers={"Authorization": f"Bearer {token_id['token']}", "API-Version": VERSION},
        )
        assert gone.status_code == 401


async def test_8_emits_order_webhooks_signed_as_the_webhook_api_says(kernel_factory) -> None:
    with webhook_receiver() as hooks:
        async with (
            stripe_standin() as stripe,
            merchant(kernel_factory, stripe, webhook_url=hooks.url) as (
                kernel,
                client,
                acp,
                agent,
            ),
        ):
            issued = await client.post(
                "/v1/tools/internal/acp-tokens",
                json={"platform": "hooked", "agent_id": agent, "webhook_url": hooks.url},
                headers=OPERATOR,
            )
            secret = issued.json()["webhook_secret"]
            from commerce_support import AcpClient

            hooked = AcpClient(client, issued.json()["token"])
            session = await hooked.create("credits_5usd")
            assert (await hooked.complete(session["id"], stripe.grant())).status_code == 200
            await kernel.webhooks.run_due()
        events = {}
        for headers, raw in hooks.received:
            event = json.loads(raw)
            validate("webhook:WebhookEvent", event)
            assert signing.verify_webhook(secret, raw, headers["merchant-signature"])
            assert headers["timestamp"].endswith("Z") and headers["request-id"]
            assert event["data"]["checkout_session_id"] == session["id"]
            events[event["type"]] = event["data"]["status"]
        # the credits are delivered with the order: created confirmed, then updated fulfilled
        assert events == {"order_create": "confirmed", "order_update": "fulfilled"}


async def test_9_uses_nested_fulfillment_details(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        details = {"name": "Ada Agent", "email": "ada@example.com", "address": ADDRESS}
        session = await acp.create("credits_5usd", fulfillment_details=details)
        assert session["fulfillment_details"] == details
        flat = await acp.client.post(
            "/v1/checkout_sessions",
            content=json.dumps(
                {
                    "line_items": [{"id": "credits_5usd"}],
                    "currency": "usd",
                    "capabilities": {},
                    "fulfillment_address": ADDRESS,
                }
            ),
            headers=acp.headers(b"y"),
        )
        assert flat.status_code == 400 and flat.json()["param"] == "$"


async def test_10_uses_the_selected_fulfillment_options_array(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        session = await acp.create("credits_5usd")
        option = session["fulfillment_options"][0]["id"]
        path = f"/v1/checkout_sessions/{session['id']}"
        chosen = {"type": "digital", "option_id": option, "item_ids": ["credits_5usd"]}
        updated = await acp.post(path, {"selected_fulfillment_options": [chosen]})
        assert updated.status_code == 200 and updated.json()["selected_fulfillment_options"] == [chosen]
        wrong = await acp.post(path, {"selected_fulfillment_options": [{**chosen, "option_id": "express"}]})
        assert wrong.status_code == 400 and wrong.json()["param"] == "$.selected_fulfillment_options[0].option_id"
        singular = await acp.client.post(path, content=b'{"fulfillment_option_id": "x"}', headers=acp.headers(b"z"))
        assert singular.status_code == 400


async def test_11_fulfillment_options_carry_totals_without_subtotal_or_tax(kernel_factory) -> None:
    async with stripe_standin() as stripe, merchant(kernel_factory, stripe) as (_k, _client, acp, _agent):
        session = await acp.create("credits_5usd")
        for option in session["fulfillment_options"]:
            assert "subtotal" not in option and "tax" not in option
            assert [t["type"] for t in option["totals"]] == ["total"]
