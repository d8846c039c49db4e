"""The buyer's side over MCP (both databases): list, search and read souls, buy a service
paid from credits, read the job once the seller (over HTTP) fulfils it, and rate it; the
same refusals as HTTP (a disabled service is not sold)."""

from __future__ import annotations

import json

from eth_account import Account
from mcp import Client
from souls_support import ENV, LINGUA, PLUGIN, register, soul_auth

from tollway.testing import credits_session, http_client, mcp_server_for


def data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def test_a_buyer_over_mcp(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    async with http_client(kernel) as client:
        key = (await register(client, Account.create(), LINGUA)).json()["soul_key"]
        await client.patch("/v1/soul/services/proofread", json={"enabled": False}, headers=soul_auth(key))
        _buyer, headers = await credits_session(client, "3")
    token = headers["Authorization"].split()[1]
    async with Client(mcp_server_for(kernel, token=token)) as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        listing = data(await mcp.call_tool("souls_list", {"category": "language"}))
        found = data(await mcp.call_tool("souls_search", {"q": "translation"}))
        soul = data(await mcp.call_tool("soul_get", {"slug": "lingua"}))
        bought = data(
            await mcp.call_tool(
                "soul_buy", {"soul": "lingua", "service": "translate", "price_usdc": "1.25", "request": {"text": "Hi"}}
            )
        )
        refused = await mcp.call_tool("soul_buy", {"soul": "lingua", "service": "proofread", "price_usdc": "0.40"})
        async with http_client(kernel) as client:
            done = await client.post(
                f"/v1/soul/orders/{bought['request_id']}/fulfil",
                json={"result": {"text": "Salut"}},
                headers=soul_auth(key),
            )
        rated = data(await mcp.call_tool("soul_rate", {"slug": "lingua", "service": "translate", "stars": 5}))
    assert {"soul_buy", "souls_list", "souls_search", "soul_get", "soul_rate"} <= names
    assert not names & {
        "soul_dashboard",
        "soul_order_fulfil",
        "soul_payout",
    }  # the seller's side is HTTP with the soul key
    assert listing["total"] == 1 and [s["slug"] for s in found["results"]] == ["lingua"]
    assert soul["services"][0]["price_usdc"] == "1.250000"
    assert bought["status"] == "pending" and done.status_code == 200
    assert refused.is_error and "service_disabled" in json.dumps(
        refused.structured_content or [c.model_dump() for c in refused.content]
    )
    assert rated["rating_count"] == 1 and rated["stars"] == 5
