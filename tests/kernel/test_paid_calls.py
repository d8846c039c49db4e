"""The paid-call pipeline through real HTTP (Litestar test client) on SQLite and
PostgreSQL: 402 quotes, x402 payments with real EIP-3009 signatures, credits,
refunds and receipts."""

from __future__ import annotations

import base64
import json
import time

import msgspec
import pytest
from eth_account import Account

from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tests.support.wallets import fund
from tollway._core.basics.money import to_micro
from tollway._core.credits.tables import LedgerEntry
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt
from tollway._core.receipts.tables import Receipt
from tollway.testing import count_quotes, credits_session, decode_payment_required, http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def test_first_call_answers_402_with_quote_and_header(kernel):
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/test/echo", json={"text": "hi there", "repeat": 2})
    assert resp.status_code == 402
    body = resp.json()
    assert body["error"] == "payment_required" and body["code"] == 402
    assert body["amount_usdc"] == "0.002000"
    assert body["pay_to"] == kernel.config.pay_to
    assert body["network"] == "eip155:84532"
    assert body["quote_id"] and body["expires_at"].endswith("Z")
    required = decode_payment_required(resp.headers["PAYMENT-REQUIRED"])
    assert required["x402Version"] == 2
    assert required["resource"]["url"].endswith("/v1/tools/test/echo")
    (req,) = required["accepts"]
    assert req["scheme"] == "exact" and req["network"] == "eip155:84532"
    assert req["amount"] == "2000" and req["payTo"] == kernel.config.pay_to
    assert req["asset"] == "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
    assert req["extra"] == {"name": "USDC", "version": "2", "quoteId": body["quote_id"]}


async def test_invalid_input_refused_before_payment_with_field_paths(kernel):
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/test/echo", json={"text": "x", "repeat": 9})
        missing = await client.post("/v1/tools/test/echo", json={})
        memo = await client.post("/v1/tools/test/echo", json={"text": "x", "memo": "m" * 1001})
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_request"
    assert resp.json()["details"] == [{"field": "repeat", "message": "repeat must be from 1 to 5"}]
    assert resp.json()["message"] == "repeat must be from 1 to 5."
    assert missing.json()["details"] == [
        {"field": "text", "message": "text is required (a string of 1 to 200 characters)"}
    ]
    assert memo.status_code == 400 and memo.json()["details"] == [
        {"field": "memo", "message": "memo must be a string of at most 1000 characters"}
    ]
    assert await count_quotes(kernel) == 0


async def test_audit_field_problems_are_listed_with_the_inputs(kernel):
    async with http_client(kernel) as client:
        resp = await client.post(
            "/v1/tools/test/echo",
            json={"text": "", "repeat": 9, "memo": 7, "decisionContext": {"confidence": 2}, "colour": "red"},
        )
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_request"
    assert resp.json()["details"] == [
        {"field": "memo", "message": "memo must be a string of at most 1000 characters"},
        {"field": "decisionContext.confidence", "message": "decisionContext.confidence must be a number from 0 to 1"},
        {"field": "text", "message": "text must be 1 to 200 characters"},
        {"field": "repeat", "message": "repeat must be from 1 to 5"},
        {"field": "colour", "message": "colour is not an accepted field"},
    ]
    assert resp.json()["message"] == "5 fields are invalid: memo, decisionContext.confidence, text, repeat, colour."
    assert await count_quotes(kernel) == 0


async def test_x402_payment_runs_once_settles_and_signs_receipt(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post(
            "/v1/tools/test/echo", json={"text": "pay me", "memo": "why", "decisionContext": {"confidence": 0.5}}
        )
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        paid = await client.post(
            "/v1/tools/test/echo",
            json={"text": "pay me", "memo": "why", "decisionContext": {"confidence": 0.5}},
            headers={"payment-signature": header, "X-Quote-ID": first.json()["quote_id"]},
        )
        assert paid.status_code == 200, paid.text
        data = paid.json()["data"]
        assert paid.json()["success"] is True
        assert data["status"] == "completed" and data["tool"] == "echo_words"
        assert data["result"] == {"text": "pay me", "words": 2}
        response = msgspec.json.decode(base64.b64decode(paid.headers["PAYMENT-RESPONSE"]))
        assert response["success"] is True and response["transaction"].startswith("0x")

        # the same authorization again: refused, never answered twice
        replay = await client.post(
            "/v1/tools/test/echo",
            json={"text": "pay me", "memo": "why", "decisionContext": {"confidence": 0.5}},
            headers={"payment-signature": header, "X-Quote-ID": first.json()["quote_id"]},
        )
        assert replay.status_code == 402
        assert replay.json()["error"] == "payment_verification_failed"
        assert replay.json()["details"]["reason"] in ("quote_already_used", "invalid_exact_evm_nonce_already_used")
        assert replay.headers["PAYMENT-REQUIRED"]

        balance = await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})
    assert balance.json()["on_chain_balance"] == "0.999000"
    assert balance.json()["credits_balance"] == "0.000000"
    assert balance.json()["chain_id"] == 84532
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "settled" and receipt["execution_status"] == "completed"
    assert receipt["amount_usdc"] == "0.001000" and receipt["memo"] == "why"
    assert receipt["decisionContext"] == {"confidence": 0.5}
    assert receipt["settlement_tx"] == response["transaction"]
    signer = ReceiptSigner(kernel.config.receipt_seed)
    assert verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")
    tampered = {**receipt, "amount_usdc": "0.000001"}
    assert verify_receipt(tampered, {signer.key_id: signer.public_key})[0] is False


async def test_payment_for_other_input_or_amount_is_refused(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post("/v1/tools/test/echo", json={"text": "a"})
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        other = await client.post(
            "/v1/tools/test/echo",
            json={"text": "b"},
            headers={"payment-signature": header, "X-Quote-ID": first.json()["quote_id"]},
        )
    assert other.status_code == 402
    assert other.json()["details"]["reason"] == "quote_mismatch"
    assert echo_plugin.RUNS.count("never") == 0
    assert await Receipt.count() == 0


async def test_unfunded_payer_is_refused_without_running_the_tool(kernel):
    payer = Account.create()
    runs_before = len(echo_plugin.RUNS)
    async with http_client(kernel) as client:
        first = await client.post("/v1/tools/test/echo", json={"text": "a"})
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        paid = await client.post("/v1/tools/test/echo", json={"text": "a"}, headers={"payment-signature": header})
    assert paid.status_code == 402
    assert paid.json()["details"]["reason"] == "invalid_exact_evm_insufficient_balance"
    assert len(echo_plugin.RUNS) == runs_before


async def test_unfunded_payer_leaves_the_quote_unused(kernel):
    """The funds check rides in the reservation's first statement: a payer short of the
    amount writes nothing, so the same quote pays once the funds are there."""
    payer = Account.create()
    runs_before = len(echo_plugin.RUNS)
    async with http_client(kernel) as client:
        first = await client.post("/v1/tools/test/echo", json={"text": "a"})
        quote = {"X-Quote-ID": first.json()["quote_id"]}
        short = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        refused = await client.post(
            "/v1/tools/test/echo", json={"text": "a"}, headers={"payment-signature": short, **quote}
        )
        assert refused.status_code == 402
        assert refused.json()["details"]["reason"] == "invalid_exact_evm_insufficient_balance"
        assert len(echo_plugin.RUNS) == runs_before
        assert await PaymentAuthorization.count() == 0
        await fund(client, payer.address, "1")
        again = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        paid = await client.post(
            "/v1/tools/test/echo", json={"text": "a"}, headers={"payment-signature": again, **quote}
        )
        assert paid.status_code == 200, paid.text
        balance = await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})
    price = to_micro(first.json()["amount_usdc"])
    assert to_micro(balance.json()["on_chain_balance"]) == 1_000_000 - price


async def test_unfunded_payer_of_a_used_quote_is_told_the_funds_first(kernel):
    """Funds are checked before the quote's use, as when they were read before the
    reservation: a quote already paid, resent by a payer without the funds, is refused
    for the funds, and the paid quote stays paid once."""
    payer, other = Account.create(), Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post("/v1/tools/test/echo", json={"text": "a"})
        quote = {"X-Quote-ID": first.json()["quote_id"]}
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        paid = await client.post(
            "/v1/tools/test/echo", json={"text": "a"}, headers={"payment-signature": header, **quote}
        )
        assert paid.status_code == 200, paid.text
        broke = pay_402(other, first.headers["PAYMENT-REQUIRED"])
        refused = await client.post(
            "/v1/tools/test/echo", json={"text": "a"}, headers={"payment-signature": broke, **quote}
        )
        assert refused.status_code == 402
        assert refused.json()["details"]["reason"] == "invalid_exact_evm_insufficient_balance"
        await fund(client, other.address, "1")
        funded = pay_402(other, first.headers["PAYMENT-REQUIRED"])
        reused = await client.post(
            "/v1/tools/test/echo", json={"text": "a"}, headers={"payment-signature": funded, **quote}
        )
        assert reused.status_code == 402
        assert reused.json()["details"]["reason"] == "quote_already_used"
    assert await PaymentAuthorization.count() == 1


async def test_tool_failure_with_x402_is_not_settled(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post("/v1/tools/test/flaky", json={"text": "boom"})
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        failed = await client.post("/v1/tools/test/flaky", json={"text": "boom"}, headers={"payment-signature": header})
        assert failed.status_code == 503
        body = failed.json()
        assert body["error"] == "provider_unavailable" and body["receipt_id"] and body["request_id"]
        balance = await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})
    assert balance.json()["on_chain_balance"] == "1.000000"
    receipt = await kernel.receipts.get(body["receipt_id"])
    assert receipt["status"] == "not_charged" and receipt["execution_status"] == "failed"
    row = await PaymentAuthorization.select().first()
    assert row["status"] == "voided"


async def test_credits_pay_without_402_and_refund_on_failure(kernel):
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={"name": "bot"}, headers=OPERATOR)).json()
        grant = await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "0.05"}, headers=OPERATOR
        )
        assert grant.json()["credits_balance"] == "0.050000"
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()
        auth = {"Authorization": f"Bearer {token['token']}"}
        ok = await client.post("/v1/tools/test/flaky", json={"text": "fine"}, headers=auth)
        assert ok.status_code == 200, ok.text
        failed = await client.post("/v1/tools/test/flaky", json={"text": "crash"}, headers=auth)
        assert failed.status_code == 500 and failed.json()["error"] == "internal_error"
        assert "(ref: req_" in failed.json()["message"]
        forced = await client.post(
            "/v1/tools/test/flaky", json={"text": "fine"}, headers={**auth, "X-Payment-Method": "x402"}
        )
        assert forced.status_code == 402
        bal = await client.get("/v1/balance", headers=auth)
    assert bal.json()["credits_balance"] == "0.040000"
    refunded = await kernel.receipts.get(failed.json()["receipt_id"])
    assert refunded["status"] == "refunded" and refunded["revision"] == 2
    revisions = await kernel.receipts.revisions(failed.json()["receipt_id"])
    assert [r["revision"] for r in revisions] == [1, 2]
    deltas = [
        r["delta"]
        for r in await LedgerEntry.select(LedgerEntry.delta).where(
            LedgerEntry.account == f"credits:{agent['agent_id']}"
        )
    ]
    assert sum(deltas) == to_micro("0.04")


async def test_an_unknown_payment_method_is_refused_before_payment_any_case_accepted(kernel):
    async with http_client(kernel) as client:
        agent_id, auth = await credits_session(client, "0.05")
        refused = [
            await client.post(
                "/v1/tools/test/flaky", json={"text": "fine"}, headers={**auth, "X-Payment-Method": value}
            )
            for value in ("card", "x-402", "credit")
        ]
        anonymous = await client.post(
            "/v1/tools/test/flaky", json={"text": "fine"}, headers={"X-Payment-Method": "bitcoin"}
        )
        upper_x402 = await client.post(
            "/v1/tools/test/flaky", json={"text": "fine"}, headers={**auth, "X-Payment-Method": " X402 "}
        )
        upper_credits = await client.post(
            "/v1/tools/test/flaky", json={"text": "fine"}, headers={**auth, "X-Payment-Method": "Credits"}
        )
        bal = await client.get("/v1/balance", headers=auth)
    for resp in [*refused, anonymous]:
        assert resp.status_code == 400, resp.text
        body = resp.json()
        assert body["error"] == "invalid_request"
        assert "credits" in body["message"] and "x402" in body["message"] and "X-Payment-Method" in body["message"]
        assert body["details"][0]["field"] == "X-Payment-Method"
    assert upper_x402.status_code == 402  # x402 asked for, in any case: a quote, credits untouched
    assert upper_credits.status_code == 200, upper_credits.text
    assert bal.json()["credits_balance"] == "0.040000"  # only the one credits call was charged
    assert await Receipt.count().where(Receipt.agent_id == agent_id) == 1


async def test_credits_that_do_not_cover_fall_back_to_402(kernel):
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant",
            json={"agent_id": agent["agent_id"], "amount": "0.001"},
            headers=OPERATOR,
        )
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()
        resp = await client.post(
            "/v1/tools/test/flaky", json={"text": "fine"}, headers={"Authorization": f"Bearer {token['token']}"}
        )
    assert resp.status_code == 402
    assert resp.json()["amount_usdc"] == "0.010000"


async def test_operator_routes_need_the_operator_token(kernel):
    async with http_client(kernel) as client:
        resp = await client.post(
            "/v1/tools/internal/agents/register", json={}, headers={"Authorization": "Bearer nope"}
        )
    assert resp.status_code == 401 and resp.json()["error"] == "unauthorized"


async def test_provider_cost_is_stored_but_never_served_or_signed(kernel):
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1"}, headers=OPERATOR
        )
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()
        paid = await client.post(
            "/v1/tools/test/echo",
            json={"text": "cost", "repeat": 3},
            headers={"Authorization": f"Bearer {token['token']}"},
        )
    receipt_id = paid.json()["data"]["receipt_id"]
    row = await Receipt.select(Receipt.provider_cost, Receipt.body).where(Receipt.receipt_id == receipt_id).first()
    assert row["provider_cost"] == 21
    served = await kernel.receipts.get(receipt_id)
    assert not any("cost" in k for k in served)
    assert 21 not in [v for v in served.values() if isinstance(v, int) and not isinstance(v, bool)]


async def test_settled_x402_charge_refunds_to_credits_once(kernel):
    import asyncio

    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post("/v1/tools/test/flaky", json={"text": "fine"})
        paid = await client.post(
            "/v1/tools/test/flaky",
            json={"text": "fine"},
            headers={"payment-signature": pay_402(payer, first.headers["PAYMENT-REQUIRED"])},
        )
        receipt_id = paid.json()["data"]["receipt_id"]
        results = await asyncio.gather(
            *[kernel.refunds.refund_to_credits(receipt_id, reason="too_few_peers") for _ in range(5)],
            return_exceptions=True,
        )
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    refunded = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if not isinstance(r, dict)]
    assert len(refunded) == 1 and len(refused) == 4
    assert all(getattr(e, "code", None) == "not_refundable" for e in refused)
    assert (
        refunded[0]["status"] == "refunded"
        and refunded[0]["revision"] == 2
        and refunded[0]["refund_reason"] == "too_few_peers"
    )
    assert balance["credits_balance"] == "0.010000"  # the USDC moved on-chain, so it comes back as credits
    assert balance["on_chain_balance"] == "0.990000"
    signer = ReceiptSigner(kernel.config.receipt_seed)
    assert verify_receipt(refunded[0], {signer.key_id: signer.public_key})[0]


def _b64_compact_json(obj) -> str:
    return base64.b64encode(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()).decode()


async def test_the_kernel_carries_x402_objects_and_http_sends_them_as_base64_headers(kernel):
    """The kernel's 402 carries the x402 PaymentRequired object and its x402-paid answer
    the SettleResponse object, not headers; the HTTP front sends each as its header,
    base64 of compact JSON, before the other headers."""
    from tollway._core.basics.errors import ServiceError
    from tollway._core.basics.request import CallRequest
    from tollway._http_server.translate import answer_response, service_error_handler

    payer = Account.create()
    url = "http://testserver.local/v1/tools/test/echo"
    body = b'{"text": "pay me"}'
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
    with pytest.raises(ServiceError) as info:
        await kernel.paid_calls.call("echo_words", CallRequest("POST", "/v1/tools/test/echo", url, {}, body))
    quote = info.value
    assert quote.status == 402 and not {k.lower() for k in quote.headers} & {"payment-required", "payment-response"}
    required = quote.payment_required
    assert required["x402Version"] == 2 and required["resource"]["url"] == url
    assert required["accepts"][0]["extra"]["quoteId"] == quote.extra["quote_id"]
    sent = service_error_handler(None, quote).headers
    assert list(sent)[0] == "PAYMENT-REQUIRED" and {"RateLimit-Limit", "RateLimit-Remaining"} <= set(sent)
    assert sent["PAYMENT-REQUIRED"] == _b64_compact_json(required)

    payment = pay_402(payer, sent["PAYMENT-REQUIRED"])
    answer = await kernel.paid_calls.call(
        "echo_words", CallRequest("POST", "/v1/tools/test/echo", url, {}, body, payment=payment)
    )
    assert answer.status == 200 and not {k.lower() for k in answer.headers} & {"payment-required", "payment-response"}
    settlement = answer.settlement
    assert (
        settlement["success"] is True
        and settlement["payer"] == payer.address
        and settlement["transaction"].startswith("0x")
    )
    answered = answer_response(answer).headers
    assert list(answered)[0] == "PAYMENT-RESPONSE" and "RateLimit-Remaining" in answered
    assert answered["PAYMENT-RESPONSE"] == _b64_compact_json(settlement)


@pytest.mark.parametrize(
    ("field", "echo", "reason"),
    [
        ("amount", lambda req: "1", "accepted_requirements_mismatch"),
        ("amount", lambda req: int(req["amount"]), None),  # the same text as a number
        ("payTo", lambda req: Account.create().address, "accepted_requirements_mismatch"),
        ("payTo", lambda req: req["payTo"].upper(), None),  # any case
        (
            "asset",
            lambda req: req["asset"][:-1] + ("0" if req["asset"][-1] != "0" else "1"),
            "accepted_requirements_mismatch",
        ),
        ("asset", lambda req: None, "accepted_requirements_mismatch"),
        ("scheme", lambda req: "EXACT", "unsupported_scheme"),
        ("network", lambda req: "eip155:1", "network_mismatch"),
        ("extra", lambda req: {}, None),  # not echoed
    ],
)
async def test_accepted_requirements_must_echo_the_quote(kernel, field, echo, reason):
    """A v2 payment's `accepted` echoes the quote's scheme, network, amount, payTo and asset
    (their text, in any case); the requirements are made once per quote and kept."""
    from tollway._core.payments.eip3009 import make_payment_header, sign_authorization
    from tollway._core.payments.networks import get_network

    payer = Account.create()
    network = get_network("local")
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post("/v1/tools/test/echo", json={"text": "a"})
        req = decode_payment_required(first.headers["PAYMENT-REQUIRED"])["accepts"][0]
        assert kernel.gateway.requirements(int(req["amount"]), first.json()["quote_id"]) == req
        now = int(time.time())
        auth, sig = sign_authorization(
            payer, network, to=req["payTo"], value=int(req["amount"]), valid_after=now - 5, valid_before=now + 120
        )
        header = make_payment_header(network, {**req, field: echo(req)}, auth, sig)
        paid = await client.post(
            "/v1/tools/test/echo",
            json={"text": "a"},
            headers={"payment-signature": header, "X-Quote-ID": first.json()["quote_id"]},
        )
    if reason is None:
        assert paid.status_code == 200, paid.text
    else:
        assert paid.status_code == 402
        assert paid.json()["details"]["reason"] == reason
        assert await PaymentAuthorization.count() == 0
