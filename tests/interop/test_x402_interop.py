"""The official x402 Python client pays Tollway tools end to end.

The real app is served by uvicorn on 127.0.0.1 as a task in the test's own event
loop (the kernel's asyncpg pool belongs to that loop). The SDK's httpx paying
client, with an `EthAccountSigner` and the EVM `exact` client scheme registered
for `eip155:84532`, does the whole round trip on its own: request -> 402 -> reads
PAYMENT-REQUIRED -> signs an EIP-3009 authorization -> resends -> 200. Nothing of
Tollway's is used on the client side. Settlement is on the local network, funded
through the operator route. NHTSA is replayed from a real recorded answer.
"""
from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest
from eth_account import Account
from x402 import x402Client
from x402.http import PAYMENT_SIGNATURE_HEADER, decode_payment_response_header
from x402.http.clients.httpx import x402AsyncTransport
from x402.mechanisms.evm.exact import ExactEvmClientScheme
from x402.mechanisms.evm.signers import EthAccountSigner

from core.receipt_signing import ReceiptSigner, verify_receipt
from runtime.service import http_app
from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tests.support.serving import serve_app
from tests.support.replay import HONDA_ACCORD_2021, nhtsa_honda_accord_2021, recorded_file
from tollway_vehicles import nhtsa

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
        resp = await plain.post("/v1/tools/internal/chain/fund", json={"address": address, "amount": amount}, headers=OPERATOR)
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
        data = await assert_paid_round_trip(kernel, base_url, "/v1/tools/test/echo", {"text": "paid by the sdk", "repeat": 2}, 2_000)
    assert data["tool"] == "echo_words"
    assert data["result"] == {"text": "paid by the sdkpaid by the sdk", "words": 4}
    assert echo_plugin.RUNS[runs_before:] == [data["request_id"]]  # ran once, for the paid request


async def test_official_client_pays_vehicle_recalls_with_nhtsa_replayed(kernel_factory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(nhtsa.BASE_URL_SETTING.env_var, raising=False)  # the real NHTSA URL, served by the replay
    replay = nhtsa_honda_accord_2021()
    kernel = await kernel_factory(installed={"tollway_vehicles"}, transport=replay)
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        data = await assert_paid_round_trip(
            kernel, base_url, "/v1/tools/lookup/vehicle-recalls", {"make": "Honda", "model": "Accord", "model_year": 2021}, 5_000
        )
    assert data["tool"] == "vehicle_recalls"
    result = data["result"]
    assert (result["make"], result["model"], result["model_year"]) == ("Honda", "Accord", 2021)
    recorded = msgspec.json.decode(recorded_file(*HONDA_ACCORD_2021).read_bytes())
    assert result["total"] == recorded["Count"] == 4  # NHTSA's own count; the recording keeps 2 of its results
    assert [r["campaign_number"] for r in result["recalls"]] == [r["NHTSACampaignNumber"] for r in recorded["results"]]
    assert result["recalls"][0]["reported_on"] == "2021-11-18"  # recorded as 18/11/2021
    assert data["evidence"]["source"]
    # NHTSA was asked once, for the paid call only, and nothing else left the kernel
    assert len(replay.served) == 1 and not replay.unexpected
