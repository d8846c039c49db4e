"""x402 over MCP: the x402 package's own MCP client helper pays a Tollway tool end
to end on the local network (through the MCP SDK's `Client`); the payment rides in
`_meta["x402/payment"]` as an object, JSON text or base64 JSON; one authorization
pays at most one call, however many retries arrive at once."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from eth_account import Account
from mcp import Client
from x402 import x402Client
from x402.mcp import x402MCPSession
from x402.mechanisms.evm.exact import ExactEvmClientScheme
from x402.mechanisms.evm.signers import EthAccountSigner

from tests.support.echo_plugin import EchoPlugin
from tests.support.facilitator_server import running_facilitator
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.receipts.tables import Receipt
from tollway._mcp_server import build_server
from tollway.testing import http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}
NETWORK = "eip155:84532"


class _ResultView:
    """A 2.x `CallToolResult` as x402's MCP helper reads it (the 1.x camelCase attributes)."""

    def __init__(self, result: Any) -> None:
        self.content = result.content
        self.isError = result.is_error
        self.structuredContent = result.structured_content
        self.meta = result.meta


class SdkSession:
    """The session x402MCPSession drives, over the MCP SDK 2.x `Client`: its `call_tool`
    takes seconds as a float where the helper passes a timedelta. Nothing else differs."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def initialize(self) -> None:  # Client already did the handshake
        return None

    async def list_tools(self) -> Any:
        return await self.client.list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: dict | None = None,
        read_timeout_seconds: timedelta | None = None,
        meta: dict | None = None,
    ) -> Any:
        seconds = read_timeout_seconds.total_seconds() if read_timeout_seconds is not None else None
        return _ResultView(await self.client.call_tool(name, arguments, read_timeout_seconds=seconds, meta=meta))


class RecordingX402Client(x402Client):
    """The SDK's payment client, keeping the payloads it signed (to replay one)."""

    def __init__(self) -> None:
        super().__init__()
        self.payloads: list[Any] = []

    async def create_payment_payload(self, *args: Any, **kwargs: Any) -> Any:
        payload = await super().create_payment_payload(*args, **kwargs)
        self.payloads.append(payload)
        return payload


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def funded_payer(kernel, amount: str = "1") -> Any:
    account = Account.create()
    async with http_client(kernel) as client:
        resp = await client.post(
            "/v1/tools/internal/chain/fund", json={"address": account.address, "amount": amount}, headers=OPERATOR
        )
    assert resp.status_code == 200, resp.text
    return account


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_x402_mcp_helper_pays_a_tool_end_to_end_and_a_replay_is_refused(kernel, mode):
    account = await funded_payer(kernel)
    payments = RecordingX402Client()
    payments.register(NETWORK, ExactEvmClientScheme(EthAccountSigner(account)))
    mcp = build_server(kernel)  # no identity: x402 is the only way to pay

    async with Client(mcp.server, mode=mode) as client:
        paying = x402MCPSession(SdkSession(client), payments)
        paid = await paying.call_tool("echo_words", {"text": "paid over mcp"})
        assert paid.payment_made is True and paid.is_error is False, paid.content
        data = json.loads(paid.content[0].text)
        assert data["status"] == "completed" and data["result"] == {"text": "paid over mcp", "words": 3}
        settle = paid.payment_response
        assert settle.success is True and settle.transaction.startswith("0x") and settle.network == NETWORK
        assert settle.payer.lower() == account.address.lower()
        assert paid.raw_result.meta["tollway/receipt_id"] == data["receipt_id"]

        (payload,) = payments.payloads
        replay = await client.call_tool(
            "echo_words", {"text": "paid over mcp"}, meta={"x402/payment": payload.model_dump(by_alias=True)}
        )

    assert replay.is_error is True
    assert replay.structured_content["x402Version"] == 2 and replay.structured_content["accepts"]
    assert replay.structured_content["error"] in ("quote_already_used", "invalid_exact_evm_nonce_already_used")
    assert replay.meta["tollway/error"]["error"] == "payment_verification_failed"
    assert await kernel.backend.on_chain_balance(account.address) == 999_000
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["payment_method"] == "x402" and receipt["status"] == "settled"
    assert receipt["settlement_tx"] == settle.transaction


@pytest.mark.parametrize("form", ["object", "json", "base64"])
async def test_payment_meta_accepts_object_json_text_and_base64(kernel, form):
    account = await funded_payer(kernel)
    async with Client(build_server(kernel).server) as client:
        quote = await client.call_tool("flaky", {"text": "fine"})
        header = base64.b64encode(json.dumps(quote.structured_content).encode()).decode()
        payment_b64 = pay_402(account, header)
        payload = json.loads(base64.b64decode(payment_b64))
        value = {"object": payload, "json": json.dumps(payload), "base64": payment_b64}[form]
        paid = await client.call_tool("flaky", {"text": "fine"}, meta={"x402/payment": value})
    assert paid.is_error is False, paid.structured_content
    assert paid.structured_content["result"] == {"text": "fine"}
    assert paid.meta["x402/payment-response"]["success"] is True
    assert await kernel.backend.on_chain_balance(account.address) == 990_000


async def test_malformed_payment_meta_is_a_payment_error(kernel):
    async with Client(build_server(kernel).server) as client:
        bad = await client.call_tool("flaky", {"text": "fine"}, meta={"x402/payment": "{not json"})
        wrong = await client.call_tool("flaky", {"text": "fine"}, meta={"x402/payment": 42})
    for result in (bad, wrong):
        assert result.is_error and result.structured_content["error"] == "payment_verification_failed"
    assert await Receipt.count() == 0


async def test_one_authorization_pays_at_most_one_of_concurrent_retries(kernel):
    account = await funded_payer(kernel)
    mcp = build_server(kernel)
    async with Client(mcp.server) as client:
        quote = await client.call_tool("echo_words", {"text": "race"})
        payment = pay_402(account, base64.b64encode(json.dumps(quote.structured_content).encode()).decode())
        results = await asyncio.gather(
            *[client.call_tool("echo_words", {"text": "race"}, meta={"x402/payment": payment}) for _ in range(6)]
        )
    ok = [r for r in results if not r.is_error]
    refused = [r for r in results if r.is_error]
    assert len(ok) == 1 and len(refused) == 5
    assert all(r.meta["tollway/error"]["error"] == "payment_verification_failed" for r in refused)
    assert await kernel.backend.on_chain_balance(account.address) == 999_000
    assert await Receipt.count() == 1
    assert [r["status"] for r in await PaymentAuthorization.select(PaymentAuthorization.status)] == ["settled"]


async def test_a_refused_settlement_carries_its_payment_response(kernel_factory):
    """x402's MCP transport: a settlement refused after the tool ran is an error result with
    the fresh requirements and `x402/payment-response` (`success: false`); nothing moved."""
    async with running_facilitator("base-sepolia") as facilitator:
        kernel = await kernel_factory(
            plugins=[("echo", EchoPlugin())],
            env={"TOLLWAY_NETWORK": "base-sepolia", "TOLLWAY_FACILITATOR_URL": facilitator.url},
        )
        account = Account.create()
        facilitator.fund(account.address, 1_000_000)
        facilitator.settle_mode = "fail"
        payments = x402Client()
        payments.register(NETWORK, ExactEvmClientScheme(EthAccountSigner(account)))
        async with Client(build_server(kernel).server) as client:
            refused = await x402MCPSession(SdkSession(client), payments).call_tool("echo_words", {"text": "refused"})
        assert facilitator.balance(account.address) == 1_000_000 and not facilitator.transactions
    assert refused.is_error is True
    structured = refused.raw_result.structuredContent
    assert structured["x402Version"] == 2 and structured["accepts"][0]["network"] == NETWORK
    settle = structured["x402/payment-response"]
    assert settle["success"] is False and settle["errorReason"] == structured["error"]
    assert settle["network"] == NETWORK and settle["payer"] == account.address
    assert json.loads(refused.raw_result.content[0].text) == structured
