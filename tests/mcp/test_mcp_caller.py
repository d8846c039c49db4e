"""The MCP front tells the kernel who calls and how it pays as values of the
`CallRequest` (`credential`, `payment`), never as HTTP headers it made up: no
self-signed agent proof, no base64 payment header for the kernel to decode again."""

from __future__ import annotations

import pytest
from eth_account import Account
from mcp import Client

from tests.support.echo_plugin import EchoPlugin
from tollway._core.basics.money import to_micro
from tollway._core.basics.request import CallRequest, HeldWallet, TokenCredential
from tollway._core.credits import ledger
from tollway._core.storage import sql
from tollway._mcp_server import BearerIdentity, WalletIdentity, build_server


@pytest.fixture
async def echo_kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


def _spy(kernel) -> list[CallRequest]:
    """Record every request the front hands the paid-call pipeline (then run it)."""
    seen: list[CallRequest] = []
    real = kernel.paid_calls.call

    async def call(tool_name: str, req: CallRequest):
        seen.append(req)
        return await real(tool_name, req)

    kernel.paid_calls.call = call
    return seen


async def test_a_wallet_key_calls_as_a_held_wallet_and_pays_with_a_payment_object(echo_kernel):
    wallet = Account.create()
    await echo_kernel.accounts.fund_chain(wallet.address, to_micro("1"))
    seen = _spy(echo_kernel)
    async with Client(
        build_server(echo_kernel, identity=WalletIdentity(wallet, echo_kernel.network.chain_id)).server
    ) as client:
        result = await client.call_tool("echo_words", {"text": "paid by the key"})
    assert result.is_error is False, result.structured_content
    assert result.meta["x402/payment-response"]["success"] is True
    quote, paid = seen  # the 402 quote, then the call carrying the signed payment
    for req in seen:
        assert req.credential == HeldWallet(wallet.address)
        assert not {"x-agent-id", "x-agent-proof", "payment-signature", "authorization"} & set(req.headers)
    assert quote.payment is None
    assert isinstance(paid.payment, dict) and paid.payment["payload"]["authorization"]["from"] == wallet.address
    # no self-signed write proof, so no proof nonce was spent
    assert int((await sql.fetch("SELECT count(*) AS n FROM tw_proof_nonces"))[0]["n"]) == 0


async def test_a_held_wallet_spends_its_credits_and_reads_as_proven(echo_kernel):
    wallet = Account.create()
    agent_id = await echo_kernel.agents.for_wallet(wallet.address)
    async with echo_kernel.db.transaction():
        await ledger.credit_credits(agent_id, to_micro("0.5"), kind="grant")
    req = CallRequest(
        "POST",
        "/v1/tools/echo/words",
        "mcp://tollway/v1/tools/echo/words",
        {},
        b'{"text": "from credits"}',
        credential=HeldWallet(wallet.address),
    )
    answer = await echo_kernel.paid_calls.call("echo_words", req)
    assert answer.status == 200
    receipt = await echo_kernel.receipts.get(answer.body.data["receipt_id"])
    assert receipt["payment_method"] == "credits" and receipt["agent_id"] == agent_id
    caller = await echo_kernel.auth.caller(
        CallRequest("GET", "/v1/balance", "mcp://tollway/v1/balance", {}, credential=HeldWallet(wallet.address)),
        scope="read",
    )
    assert caller is not None and caller.proven and caller.can_spend and caller.agent_id == agent_id


async def test_a_payment_object_in_meta_reaches_the_kernel_as_is(echo_kernel):
    seen = _spy(echo_kernel)
    payment = {"x402Version": 2, "payload": {}, "accepted": {"scheme": "exact", "network": echo_kernel.network.caip2}}
    async with Client(build_server(echo_kernel, identity=BearerIdentity("tw_at_unknown")).server) as client:
        result = await client.call_tool("echo_words", {"text": "x"}, meta={"x402/payment": payment})
    assert result.is_error is True
    assert result.meta["tollway/error"]["error"] == "payment_verification_failed"
    (req,) = seen
    assert req.payment == payment and req.credential == TokenCredential("tw_at_unknown")
    assert "payment-signature" not in req.headers
