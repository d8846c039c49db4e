"""`tollway mcp` with a wallet private key in TOLLWAY_AGENT_KEY pays as that wallet:
credits first when they cover the price (a write proof signed with the key),
else an x402 payment it signs itself, within TOLLWAY_MCP_MAX_PAYMENT_USDC a call.
A failed job paid by x402 is refunded to the wallet's credits, which the same
session then spends. Through the MCP SDK's stdio client against the real
command, on the local network, with real signatures."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from eth_account import Account
from mcp import Client

from tests.mcp.test_mcp_transports import tollway_mcp
from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tests.support.lookup_plugin import LookupPlugin, word_list_app
from tests.support.serving import serve_app
from tollway._core.basics.money import to_micro
from tollway._mcp_server import McpSettings, WalletIdentity, build_server
from tollway.testing import settings_for

SHIP = {"word": "ship"}


@pytest.fixture
async def kernel(kernel_factory):
    """The test's view of the database `tollway mcp` uses (balances, receipts)."""
    return await kernel_factory(plugins=[("echo", EchoPlugin()), ("jobs", JobsPlugin()), ("lookup", LookupPlugin())])


async def test_a_wallet_key_pays_by_x402_and_spends_its_refunds_as_credits(kernel, tmp_path, db_kind):
    wallet = Account.create()
    await kernel.accounts.fund_chain(wallet.address, to_micro("1"))
    served: list[str] = []
    async with serve_app(word_list_app(served)) as words_url:
        params = tollway_mcp(tmp_path, db_kind, TOLLWAY_AGENT_KEY=wallet.key.hex(), TOLLWAY_LOOKUP_API_URL=words_url)
        params.args = ["mcp", "--workers", "1"]  # runs the broken_job job itself
        async with Client(params) as client:
            paid = await client.call_tool("lookup_word", SHIP)
            on_chain_after_paid = await kernel.backend.on_chain_balance(wallet.address)
            failed = await client.call_tool("broken_job", {"a": 1, "wait_seconds": 30})  # 0.002 USDC, fails
            refunded = await client.call_tool("balance", {})
            from_credits = await client.call_tool("echo_words", {"text": "from credits"})  # 0.001 USDC
            after = await client.call_tool("balance", {})

    # 1. no credits: the server signed an x402 payment with the key, and the answer came back
    assert paid.is_error is False, paid.structured_content
    assert paid.structured_content["status"] == "completed" and paid.structured_content["result"]["senses"]
    settle = paid.meta["x402/payment-response"]
    assert settle["success"] is True and settle["payer"].lower() == wallet.address.lower()
    receipt = await kernel.receipts.get(paid.meta["tollway/receipt_id"])
    assert (
        receipt["payment_method"] == "x402" and receipt["status"] == "settled" and receipt["amount_usdc"] == "0.005000"
    )
    assert receipt["settlement_tx"] == settle["transaction"]
    assert on_chain_after_paid == 1_000_000 - 5_000  # dropped by the price, exactly

    # 2. a job paid by x402 failed: its price came back as the wallet's credits
    job = failed.structured_content
    assert failed.is_error is False and job["status"] == "failed" and job["job"]["error_code"] == "provider_unavailable"
    assert "refunded to your credits" in job["message"]
    job_receipt = await kernel.receipts.get(job["receipt_id"])
    assert job_receipt["payment_method"] == "x402" and job_receipt["status"] == "refunded"
    assert refunded.structured_content["credits_balance"] == "0.002000"
    assert refunded.structured_content["address"] == wallet.address
    assert refunded.structured_content["on_chain_balance"] == "0.993000"

    # 3. the next call is paid from those credits (a write proof signed with the key), not on chain
    assert from_credits.is_error is False, from_credits.structured_content
    assert "x402/payment-response" not in (from_credits.meta or {})
    credit_receipt = await kernel.receipts.get(from_credits.meta["tollway/receipt_id"])
    assert (
        credit_receipt["payment_method"] == "credits"
        and credit_receipt["agent_id"] == receipt["agent_id"] == job_receipt["agent_id"]
    )
    assert after.structured_content["credits_balance"] == "0.001000"
    assert after.structured_content["on_chain_balance"] == "0.993000"
    assert served == ["/v1/words"]  # the lookup's upstream, asked once, for the paid call


@pytest.fixture
async def echo_kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def test_a_price_over_the_cap_is_refused_naming_the_setting(echo_kernel):
    wallet = Account.create()
    await echo_kernel.accounts.fund_chain(wallet.address, to_micro("1"))
    identity = WalletIdentity(wallet, echo_kernel.network.chain_id)
    mcp = build_server(echo_kernel, identity=identity, settings=McpSettings(max_payment=to_micro("0.005")))
    async with Client(mcp.server) as client:
        over = await client.call_tool("flaky", {"text": "fine"})  # 0.010 USDC
        under = await client.call_tool("echo_words", {"text": "cheap enough"})  # 0.001 USDC
    assert over.is_error is True and over.structured_content["error"] == "payment_over_limit"
    assert "TOLLWAY_MCP_MAX_PAYMENT_USDC" in over.structured_content["message"]
    assert over.structured_content["details"] == {
        "price_usdc": "0.010000",
        "max_payment_usdc": "0.005000",
        "setting": "TOLLWAY_MCP_MAX_PAYMENT_USDC",
    }
    assert under.is_error is False and under.meta["x402/payment-response"]["success"] is True
    assert (
        await echo_kernel.backend.on_chain_balance(wallet.address) == 1_000_000 - 1_000
    )  # only the call under the cap


async def test_an_unfunded_wallet_gets_a_clear_payment_error(echo_kernel):
    wallet = Account.create()  # holds nothing on chain
    mcp = build_server(echo_kernel, identity=WalletIdentity(wallet, echo_kernel.network.chain_id))
    async with Client(mcp.server) as client:
        result = await client.call_tool("echo_words", {"text": "no funds"})
    assert result.is_error is True and result.structured_content["error"] == "payment_verification_failed"
    assert result.structured_content["message"].startswith(
        f"Paying 0.001000 USDC from your wallet {wallet.address} failed: "
    )
    assert result.structured_content["details"]["reason"] == "invalid_exact_evm_insufficient_balance"
    assert result.structured_content["details"]["payer"] == wallet.address


def test_the_cap_setting_is_read_and_checked():
    assert McpSettings.from_env({}).max_payment == 1_000_000
    assert McpSettings.from_env({"TOLLWAY_MCP_MAX_PAYMENT_USDC": "0.25"}).max_payment == 250_000
    for bad in ("lots", "-1", "0.0000001"):
        with pytest.raises(ValueError, match="TOLLWAY_MCP_MAX_PAYMENT_USDC"):
            McpSettings.from_env({"TOLLWAY_MCP_MAX_PAYMENT_USDC": bad})


async def test_tollway_mcp_refuses_a_malformed_cap_before_reading_stdin(tmp_path):
    env = {
        **os.environ,
        **{k: v for k, v in settings_for(tmp_path, "sqlite").env.items() if k.startswith("TOLLWAY_")},
        "TOLLWAY_MCP_MAX_PAYMENT_USDC": "lots",
    }
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "tollway"),
        "mcp",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 2
    assert (
        err.decode().strip()
        == "tollway: TOLLWAY_MCP_MAX_PAYMENT_USDC must be a USDC amount (0 or more, at most 6 decimals)"
    )
