"""web_search over MCP: listed with its bounds, and paid by a wallet key in one call
(quote, signed payment, answer), with SearXNG's documented answer replayed through
the kernel's HTTP client; a provider failure is an MCP error and the wallet keeps its
money."""

from __future__ import annotations

from pathlib import Path

import httpx
from eth_account import Account
from mcp import Client

from tollway._core.basics.money import to_micro
from tollway._mcp_server import WalletIdentity, build_server

SEARXNG = (
    Path(__file__).resolve().parents[2] / "plugins" / "web" / "tests" / "fixtures" / "search" / "searxng_search.json"
).read_bytes()
ENV = {"TOLLWAY_SEARCH_PROVIDER": "searxng", "TOLLWAY_SEARCH_SEARXNG_URL": "http://searxng.test"}


def replay(status: int, body: bytes, seen: list[httpx.Request]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=body, headers={"Content-Type": "application/json"})

    return httpx.MockTransport(answer)


async def test_a_wallet_pays_for_a_search_over_mcp(kernel_factory) -> None:
    seen: list[httpx.Request] = []
    kernel = await kernel_factory(installed={"tollway_web"}, env=ENV, transport=replay(200, SEARXNG, seen))
    wallet = Account.create()
    await kernel.accounts.fund_chain(wallet.address, to_micro("1"))
    async with Client(build_server(kernel, identity=WalletIdentity(wallet, kernel.network.chain_id)).server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("web_search", {"query": "harbour ferry timetable", "max_results": 2})
    schema = listed["web_search"].input_schema
    assert schema["properties"]["query"]["maxLength"] == 500 and schema["required"] == ["query"]
    assert result.is_error is False, result.structured_content
    data = result.structured_content
    assert data["tool"] == "web_search" and data["result_count"] == 2
    assert [r["url"] for r in data["results"]] == [
        "https://harbour.example.org/ferry/timetable/",
        "https://news.example.net/2026/tide-tables-move-morning-ferry",
    ]
    assert result.meta["x402/payment-response"]["success"] is True
    (asked,) = seen
    assert asked.url.path == "/search" and asked.url.params["format"] == "json"


async def test_a_provider_failure_over_mcp_is_an_error_and_not_settled(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env=ENV, transport=replay(429, b"{}", []))
    wallet = Account.create()
    await kernel.accounts.fund_chain(wallet.address, to_micro("1"))
    async with Client(build_server(kernel, identity=WalletIdentity(wallet, kernel.network.chain_id)).server) as client:
        result = await client.call_tool("web_search", {"query": "ferry"})
    assert result.is_error is True
    assert result.structured_content["error"] == "rate_limited" and result.meta["tollway/error"]["status"] == 503
    assert await kernel.backend.on_chain_balance(wallet.address) == to_micro("1")
