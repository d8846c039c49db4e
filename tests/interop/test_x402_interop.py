"""The official x402 Python client pays Tollway tools end to end.

The real app is served by uvicorn on 127.0.0.1 as a task in the test's own event
loop (the kernel's asyncpg pool belongs to that loop). The SDK's httpx paying
client, with an `EthAccountSigner` and the EVM `exact` client scheme registered
for `eip155:84532`, does the whole round trip on its own: request -> 402 -> reads
PAYMENT-REQUIRED -> signs an EIP-3009 authorization -> resends -> 200. Nothing of
Tollway's is used on the client side. Settlement is on the local network, funded
through the operator route. The lookup tool's upstream is the test word list service.
"""

from __future__ import annotations

from typing import Any

import httpx
from eth_account import Account
from x402 import x402Client
from x402.http import PAYMENT_SIGNATURE_HEADER, decode_payment_response_header
from x402.http.clients.httpx import x402AsyncTransport
from x402.mechanisms.evm.exact import ExactEvmClientScheme
from x402.mechanisms.evm.signers import EthAccountSigner

from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tests.support.lookup_plugin import WORDS, LookupPlugin, word_list_transport
from tests.support.serving import serve_app
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt
from tollway._runtime.service import http_app

OPERATOR = {"Authorization": "Bearer test-operator-token"}
NETWORK = "eip155:84532"


class RecordingTransport(httpx.AsyncHTTPTransport):
    """The real HTTP transport, noting each request the SDK puts on the wire."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[httpx.Request] = []
        self.statuses: list[int] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        response = await super().handle_async_request(request)
        self.statuses.append(response.status_code)
        return response


def sdk_paying_client(account: Any, base_url: str, wire: httpx.AsyncBaseTransport) -> httpx.AsyncClient:
    client = x402Client()
    client.register(NETWORK, ExactEvmClientScheme(EthAccountSigner(account)))
    return httpx.AsyncClient(transport=x402AsyncTransport(client, wire), base_url=base_url, timeout=30.0)


async def fund(base_url: str, address: str, amount: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as plain:
        resp = await plain.post(
            "/v1/tools/internal/chain/fund", json={"address": address, "amount": amount}, headers=OPERATOR
        )
    assert resp.status_code == 200, resp.text


async def assert_paid_round_trip(kernel: Any, base_url: str, path: str, body: dict, price: int) -> dict:
    """Fund a new payer, let the SDK pay `path`, check money moved and the receipt; return the answer's data."""
    account = Account.create()
    await fund(base_url, account.address, "1")
    before = await kernel.backend.on_chain_balance(account.address)
    assert before == 1_000_000

    wire = RecordingTransport()
    async with sdk_paying_client(account, base_url, wire) as client:
        resp = await client.post(path, json=body)
    assert resp.status_code == 200, resp.text
    # the SDK did the round trip itself: unpaid request, 402, paid retry
    assert wire.statuses == [402, 200]
    assert PAYMENT_SIGNATURE_HEADER not in wire.sent[0].headers
    assert wire.sent[1].headers[PAYMENT_SIGNATURE_HEADER]

    settle = decode_payment_response_header(resp.headers["PAYMENT-RESPONSE"])
    assert settle.success is True and settle.error_reason is None
    assert settle.network == NETWORK
    assert settle.payer == account.address
    assert settle.transaction.startswith("0x") and len(settle.transaction) == 66

    assert await kernel.backend.on_chain_balance(account.address) == before - price
    data = resp.json()["data"]
    assert resp.json()["success"] is True and data["status"] == "completed"

    async with httpx.AsyncClient(base_url=base_url) as plain:
        fetched = await plain.get(f"/v1/receipts/{data['receipt_id']}", headers={"X-Agent-ID": account.address})
    assert fetched.status_code == 200, fetched.text
    receipt = fetched.json()
    assert receipt["status"] == "settled" and receipt["execution_status"] == "completed"
    assert receipt["payment_method"] == "x402"
    assert receipt["settlement_tx"] == settle.transaction
    assert receipt["amount_usdc"] == f"{price / 1_000_000:.6f}"
    signer = ReceiptSigner(kernel.config.receipt_seed)
    assert verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")
    return data


async def test_official_client_pays_the_echo_tool(kernel_factory):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    runs_before = len(echo_plugin.RUNS)
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        data = await assert_paid_round_trip(
            kernel, base_url, "/v1/tools/test/echo", {"text": "paid by the sdk", "repeat": 2}, 2_000
        )
    assert data["tool"] == "echo_words"
    assert data["result"] == {"text": "paid by the sdkpaid by the sdk", "words": 4}
    assert echo_plugin.RUNS[runs_before:] == [data["request_id"]]  # ran once, for the paid request


async def test_official_client_pays_a_tool_that_calls_an_upstream(kernel_factory):
    upstream = word_list_transport()
    kernel = await kernel_factory(plugins=[("lookup", LookupPlugin())], transport=upstream)
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        data = await assert_paid_round_trip(kernel, base_url, "/v1/tools/test/lookup", {"word": "ship"}, 5_000)
    assert data["tool"] == "lookup_word"
    result = data["result"]
    known = WORDS["ship"]
    assert result["word"] == "ship"
    assert result["total"] == known["total"] == 3  # the upstream's own count; it sent 2 senses
    assert [s["id"] for s in result["senses"]] == [s["id"] for s in known["senses"]]
    assert result["senses"][0]["first_seen"] == "0890-01-12"  # sent as 12/01/0890
    assert data["evidence"]["url"] == "https://words.tollway.test/v1/words?word=ship"
    # the upstream was asked once, for the paid call only, and nothing else left the kernel
    assert len(upstream.served) == 1 and not upstream.unexpected
