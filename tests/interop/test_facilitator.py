"""The `facilitator` settlement backend against a real facilitator over real HTTP.

The facilitator (tests/support/facilitator_server.py) runs under uvicorn on
127.0.0.1; the kernel is started for `base-sepolia` with TOLLWAY_FACILITATOR_URL
pointing at it and no outbound transport of its own, so /verify and /settle go
over TCP exactly as they would to a hosted facilitator. Payments carry real
EIP-3009 signatures; the facilitator checks them and keeps the balances.
"""

from __future__ import annotations

import base64
import time

import httpx
import msgspec
import pytest
from eth_account import Account
from x402 import x402Client
from x402.http import decode_payment_response_header
from x402.http.clients import x402AsyncTransport
from x402.mechanisms.evm.exact import register_exact_evm_client
from x402.schemas import SupportedResponse

from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tests.support.facilitator_server import running_facilitator
from tollway._core.payments import x402 as wire
from tollway._core.payments.eip3009 import make_payment_header, sign_authorization
from tollway._core.payments.networks import get_network
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt
from tollway._core.receipts.tables import Receipt
from tollway._runtime.service import http_app
from tollway.testing import http_client, pay_402

ECHO = "/v1/tools/test/echo"
PRICE = 1_000  # echo_words with repeat 1
# Stand-in for the kernel's 15 s outbound timeout while a facilitator-specific
# knob does not exist (see the hanging-settle test).
SETTLE_TIMEOUT_S = 1.0


@pytest.fixture
async def facilitator():
    async with running_facilitator("base-sepolia") as fac:
        yield fac


@pytest.fixture
async def kernel(kernel_factory, facilitator):
    kernel = await kernel_factory(
        plugins=[("echo", EchoPlugin())],
        env={
            "TOLLWAY_NETWORK": "base-sepolia",
            "TOLLWAY_FACILITATOR_URL": facilitator.url,
            "TOLLWAY_FACILITATOR_TIMEOUT_S": str(SETTLE_TIMEOUT_S),
        },
    )
    assert kernel.backend.name == "facilitator" and kernel.http_transport is None
    return kernel


def payment_response(resp: httpx.Response) -> dict:
    return msgspec.json.decode(base64.b64decode(resp.headers["PAYMENT-RESPONSE"]))


async def quote_and_pay(client: httpx.AsyncClient, payer, body: dict) -> tuple[httpx.Response, str]:
    first = await client.post(ECHO, json=body)
    assert first.status_code == 402, first.text
    header = pay_402(payer, first.headers["PAYMENT-REQUIRED"], "base-sepolia")
    return first, header


async def test_supported_is_read_over_http(kernel, facilitator):
    supported = SupportedResponse.model_validate(await kernel.backend.supported())
    assert [(k.x402_version, k.scheme, k.network) for k in supported.kinds] == [(2, "exact", "eip155:84532")]
    assert facilitator.calls("supported") == 1


async def test_payment_settles_through_the_facilitator(kernel, facilitator):
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    runs_before = len(echo_plugin.RUNS)
    async with http_client(kernel) as client:
        first, header = await quote_and_pay(client, payer, {"text": "via facilitator"})
        assert first.json()["network"] == "eip155:84532"
        paid = await client.post(ECHO, json={"text": "via facilitator"}, headers={"payment-signature": header})
    assert paid.status_code == 200, paid.text
    data = paid.json()["data"]
    assert data["result"] == {"text": "via facilitator", "words": 2}
    assert len(echo_plugin.RUNS) == runs_before + 1

    (settled,) = facilitator.transactions
    response = payment_response(paid)
    assert response == {
        "success": True,
        "payer": payer.address,
        "transaction": settled["transaction"],
        "network": "eip155:84532",
    }
    assert facilitator.balance(payer.address) == 1_000_000 - PRICE
    assert facilitator.balance(kernel.config.pay_to) == PRICE
    assert [name for name, _ in facilitator.requests] == ["verify", "settle"]
    # what the kernel sent is the SDK's request body: version, payload as signed, the quote's requirements
    _, settle_body = facilitator.requests[1]
    assert settle_body["x402Version"] == 2
    assert settle_body["paymentRequirements"]["extra"]["quoteId"] == first.json()["quote_id"]
    assert settle_body["paymentPayload"]["payload"]["authorization"]["from"] == payer.address

    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "settled" and receipt["execution_status"] == "completed"
    assert receipt["settlement_tx"] == settled["transaction"]
    signer = ReceiptSigner(kernel.config.receipt_seed)
    assert verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")
    row = await PaymentAuthorization.select().first()
    assert row["status"] == "settled" and row["settlement_tx"] == settled["transaction"]


async def test_payer_without_funds_is_refused_with_the_facilitators_reason(kernel, facilitator):
    payer = Account.create()  # never funded at the facilitator
    runs_before = len(echo_plugin.RUNS)
    async with http_client(kernel) as client:
        _, header = await quote_and_pay(client, payer, {"text": "broke"})
        paid = await client.post(ECHO, json={"text": "broke"}, headers={"payment-signature": header})
    assert paid.status_code == 402, paid.text
    body = paid.json()
    assert body["error"] == "payment_verification_failed"
    assert body["details"]["reason"] == wire.ERR_INSUFFICIENT_BALANCE
    assert wire.ERR_INSUFFICIENT_BALANCE in body["message"]
    assert paid.headers["PAYMENT-REQUIRED"]  # a fresh quote to pay again
    assert len(echo_plugin.RUNS) == runs_before  # the tool never ran
    assert [name for name, _ in facilitator.requests] == ["verify"]
    assert await PaymentAuthorization.count() == 0
    assert await Receipt.count() == 0


async def test_settle_hanging_past_the_timeout_answers_200_pending(kernel, facilitator):
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    facilitator.settle_mode = "hang"
    runs_before = len(echo_plugin.RUNS)
    async with http_client(kernel) as client:
        _, header = await quote_and_pay(client, payer, {"text": "slow chain"})
        paid = await client.post(ECHO, json={"text": "slow chain"}, headers={"payment-signature": header})
    assert paid.status_code == 200, paid.text  # never a fresh 402: the payer may be charged
    data = paid.json()["data"]
    assert data["result"]["text"] == "slow chain"
    assert len(echo_plugin.RUNS) == runs_before + 1
    response = payment_response(paid)
    assert response["success"] is False and response["transaction"] == ""
    assert response["errorReason"] == "settlement_timeout"
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "pending" and receipt["execution_status"] == "completed"
    assert receipt["settlement_tx"] is None
    row = await PaymentAuthorization.select().first()
    assert row["status"] == "pending" and row["receipt_id"] == data["receipt_id"]

    # The transfer lands after the kernel gave up: the payer is charged exactly once,
    # which is what a later reconciliation of the pending receipt finds.
    facilitator.settle_finished.clear()
    facilitator.release()
    await facilitator.settle_finished.wait()
    (settled,) = facilitator.transactions
    assert settled["from"] == payer.address and settled["value"] == PRICE
    assert facilitator.balance(payer.address) == 1_000_000 - PRICE


async def test_failed_settlement_is_not_charged(kernel, facilitator):
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    facilitator.settle_mode = "fail"
    async with http_client(kernel) as client:
        _, header = await quote_and_pay(client, payer, {"text": "reverted"})
        paid = await client.post(ECHO, json={"text": "reverted"}, headers={"payment-signature": header})
    assert paid.status_code == 402, paid.text
    assert paid.json()["error"] == "payment_verification_failed"
    assert paid.json()["details"]["reason"] == wire.ERR_TRANSACTION_FAILED
    # x402 v2's HTTP transport: the refused settlement comes back as PAYMENT-RESPONSE,
    # beside a fresh quote to pay again
    assert payment_response(paid) == {
        "success": False,
        "errorReason": wire.ERR_TRANSACTION_FAILED,
        "payer": payer.address,
        "transaction": "",
        "network": "eip155:84532",
    }
    assert wire.decode_header(paid.headers["PAYMENT-REQUIRED"])["accepts"][0]["extra"]["quoteId"]
    assert facilitator.balance(payer.address) == 1_000_000 and not facilitator.transactions
    (receipt,) = await Receipt.select()
    assert receipt["status"] == "not_charged"
    row = await PaymentAuthorization.select().first()
    assert row["status"] == "failed"


async def test_the_official_client_reads_a_refused_settlement(kernel, facilitator):
    """The x402 SDK's paying transport gets the 402 of a settlement the facilitator
    refused and reads its PAYMENT-RESPONSE as a SettleResponse; nothing moved."""
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    facilitator.settle_mode = "fail"
    sdk = register_exact_evm_client(x402Client(), payer)
    app = httpx.ASGITransport(app=http_app(kernel, manage_kernel=False), client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=x402AsyncTransport(sdk, app), base_url="http://testserver.local") as client:
        resp = await client.post(ECHO, json={"text": "refused"})
    assert resp.status_code == 402, resp.text
    assert resp.json()["details"]["reason"] == wire.ERR_TRANSACTION_FAILED
    settle = decode_payment_response_header(resp.headers["PAYMENT-RESPONSE"])
    assert settle.success is False and settle.error_reason == wire.ERR_TRANSACTION_FAILED
    assert settle.network == "eip155:84532" and settle.payer == payer.address
    assert facilitator.calls("settle") == 1 and not facilitator.transactions
    assert facilitator.balance(payer.address) == 1_000_000


async def test_a_top_up_whose_settlement_is_refused_says_so_in_payment_response(kernel, facilitator):
    payer = Account.create()
    facilitator.fund(payer.address, 5_000_000)
    facilitator.settle_mode = "fail"
    top_up = {"amount": 2, "memo": "refused"}
    async with http_client(kernel) as client:
        quote = await client.post("/v1/credits/top-up", json=top_up, headers={"X-Agent-ID": payer.address})
        assert quote.status_code == 402, quote.text
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia")
        paid = await client.post(
            "/v1/credits/top-up", json=top_up, headers={"X-Agent-ID": payer.address, "payment-signature": header}
        )
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    assert paid.status_code == 402, paid.text
    assert paid.json()["details"]["reason"] == wire.ERR_TRANSACTION_FAILED
    settle = payment_response(paid)
    assert settle["success"] is False and settle["errorReason"] == wire.ERR_TRANSACTION_FAILED
    assert settle["payer"] == payer.address and settle["network"] == "eip155:84532"
    assert facilitator.balance(payer.address) == 5_000_000 and not facilitator.transactions
    assert balance["credits_balance"] == "0.000000"


async def test_replayed_payment_is_refused_and_charged_once(kernel, facilitator):
    payer = Account.create()
    facilitator.fund(payer.address, 1_000_000)
    runs_before = len(echo_plugin.RUNS)
    async with http_client(kernel) as client:
        first, header = await quote_and_pay(client, payer, {"text": "once"})
        paid = await client.post(ECHO, json={"text": "once"}, headers={"payment-signature": header})
        assert paid.status_code == 200, paid.text
        # the same header again, as sent
        replay = await client.post(ECHO, json={"text": "once"}, headers={"payment-signature": header})
        # the same authorization under a fresh, unused quote for the same input
        fresh = await client.post(ECHO, json={"text": "once"})
        under_fresh_quote = await client.post(
            ECHO, json={"text": "once"}, headers={"payment-signature": header, "X-Quote-ID": fresh.json()["quote_id"]}
        )
    assert replay.status_code == 402 and replay.json()["error"] == "payment_verification_failed"
    assert replay.json()["details"]["reason"] in ("quote_already_used", wire.ERR_NONCE_ALREADY_USED)
    assert under_fresh_quote.status_code == 402 and under_fresh_quote.json()["error"] == "payment_verification_failed"
    assert under_fresh_quote.json()["details"]["reason"] == wire.ERR_NONCE_ALREADY_USED
    assert len(echo_plugin.RUNS) == runs_before + 1
    assert facilitator.calls("settle") == 1 and len(facilitator.transactions) == 1
    assert facilitator.balance(payer.address) == 1_000_000 - PRICE


async def test_the_facilitator_itself_refuses_what_a_real_one_refuses(facilitator):
    """The stand-in is no rubber stamp: a signature by another key, a short amount,
    another network and a malformed body are refused at its /verify."""
    network = get_network("base-sepolia")
    payer, other = Account.create(), Account.create()
    facilitator.fund(payer.address, 1_000_000)
    pay_to = Account.create().address
    requirements = wire.build_requirements(network, PRICE, pay_to, "q_test")

    def body(signer, value=PRICE, reqs=requirements) -> dict:
        now = int(time.time())
        auth, sig = sign_authorization(
            signer, network, to=pay_to, value=value, valid_after=now - 5, valid_before=now + 120
        )
        if signer is other:  # claim to be the funded payer
            auth = wire.Authorization(
                payer.address, auth.to, auth.value, auth.valid_after, auth.valid_before, auth.nonce
            )
        payload = msgspec.json.decode(base64.b64decode(make_payment_header(network, reqs, auth, sig)))
        return {"x402Version": 2, "paymentPayload": payload, "paymentRequirements": reqs}

    async with httpx.AsyncClient(base_url=facilitator.url) as client:
        ok = (await client.post("/verify", json=body(payer))).json()
        forged = (await client.post("/verify", json=body(other))).json()
        short = (await client.post("/verify", json=body(payer, value=PRICE - 1))).json()
        mainnet = wire.build_requirements(get_network("base"), PRICE, pay_to, "q_test")
        wrong_network = (await client.post("/verify", json=body(payer, reqs=mainnet))).json()
        malformed = await client.post("/verify", json={"x402Version": 2, "paymentPayload": {}})
        settled_forged = (await client.post("/settle", json=body(other))).json()
    assert ok == {"isValid": True, "payer": payer.address}
    assert forged["isValid"] is False and forged["invalidReason"] == wire.ERR_INVALID_SIGNATURE
    assert short["isValid"] is False and short["invalidReason"] == wire.ERR_AUTHORIZATION_VALUE_MISMATCH
    assert wrong_network["isValid"] is False and wrong_network["invalidReason"] == wire.ERR_NETWORK_MISMATCH
    assert malformed.status_code == 400 and malformed.json()["isValid"] is False
    assert settled_forged["success"] is False and settled_forged["errorReason"] == wire.ERR_INVALID_SIGNATURE
    assert facilitator.balance(payer.address) == 1_000_000 and not facilitator.transactions
