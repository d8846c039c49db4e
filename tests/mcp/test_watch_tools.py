"""The watch tools over MCP (`watch_create`, `watch_list`, `watch_update`,
`watch_delete`), through the SDK's own client: a held wallet key and a signed-in
access token may change watches, an operator-issued token may only list them, and
the refusals are the HTTP routes' (docs/watches.md, docs/mcp.md)."""

from __future__ import annotations

import time

import pytest
from eth_account import Account
from mcp import Client

from tests.support.feed_plugin import ATTRIBUTE, FeedPlugin
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.basics.request import CallRequest
from tollway._core.storage import sql
from tollway._mcp_server import BearerIdentity, WalletIdentity, build_server

ITEM = {"entity_type": "item", "attribute": ATTRIBUTE, "key": "ITEM-3", "max_spend": 0.5}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("feed", FeedPlugin())])


def wallet_client(kernel, account=None):
    account = account or Account.create()
    return Client(build_server(kernel, identity=WalletIdentity(account, kernel.network.chain_id)).server)


async def signed_in_token(kernel, account) -> str:
    """What POST /v1/auth/sign-in answers the wallet (called on the kernel with a real write proof)."""
    path = "/v1/auth/sign-in"
    proof = make_agent_proof(
        account,
        chain_id=kernel.network.chain_id,
        scope="write",
        method="POST",
        path=path,
        body=b"",
        now=int(time.time()),
    )
    req = CallRequest("POST", path, "http://test" + path, {"x-agent-id": account.address, "x-agent-proof": proof}, b"")
    return (await kernel.accounts.sign_in(req)).token


async def test_a_held_wallet_creates_lists_changes_and_deletes(kernel):
    async with wallet_client(kernel) as client:
        created = await client.call_tool("watch_create", {**ITEM, "webhook_url": "https://hooks.example.com/w"})
        assert created.is_error is False, created.structured_content
        watch = created.structured_content
        assert (
            watch["webhook_secret"].startswith("whsec_") and watch["status"] == "running" and watch["max_spend"] == 0.5
        )
        listed = (await client.call_tool("watch_list", {})).structured_content["watches"]
        assert [w["id"] for w in listed] == [watch["id"]] and "webhook_secret" not in listed[0]

        paused = (
            await client.call_tool("watch_update", {"id": watch["id"], "paused": True, "webhook_url": None})
        ).structured_content
        assert (paused["status"], paused["pause_reason"], paused["webhook_url"]) == ("paused", "agent", None)
        stored = await sql.fetch_one("SELECT webhook_secret, status FROM tw_watches WHERE id = {}", watch["id"])
        assert (stored["webhook_secret"], stored["status"]) == (None, "paused")
        renewed = (
            await client.call_tool("watch_update", {"id": watch["id"], "webhook_url": "https://new.example.com/w"})
        ).structured_content
        assert renewed["webhook_secret"].startswith("whsec_") and renewed["webhook_secret"] != watch["webhook_secret"]

        deleted = await client.call_tool("watch_delete", {"id": watch["id"]})
        assert deleted.structured_content == {"id": watch["id"], "deleted": True}
        assert (await client.call_tool("watch_list", {})).structured_content == {"watches": []}
        again = await client.call_tool("watch_delete", {"id": watch["id"]})
        assert again.is_error is True and again.structured_content["error"] == "not_found"


async def test_refusals_are_the_routes_own(kernel):
    async with wallet_client(kernel) as client:
        result = await client.call_tool(
            "watch_create", {**ITEM, "attribute": "us_treasury_sanctions", "entity_type": "company"}
        )
        assert result.is_error is True and result.structured_content["error"] == "invalid_input"
        assert result.structured_content["details"]["watchable"] == [{"entity_type": "item", "attribute": ATTRIBUTE}]
        result = await client.call_tool(
            "watch_create", {**ITEM, "max_spend": 200, "webhook_url": "http://plain.example.com"}
        )
        assert result.structured_content["error"] == "invalid_request"
        assert [d["field"] for d in result.structured_content["details"]] == ["max_spend", "webhook_url"]
        result = await client.call_tool("watch_update", {"paused": True})
        assert result.is_error is True and result.structured_content["details"] == [
            {"field": "id", "message": "is required (a string)"}
        ]
        result = await client.call_tool("watch_list", {"limit": 5})
        assert result.is_error is True and result.structured_content["details"][0]["field"] == "limit"
    # another wallet's watch is not found
    async with wallet_client(kernel) as owner:
        watch_id = (await owner.call_tool("watch_create", ITEM)).structured_content["id"]
    async with wallet_client(kernel) as other:
        for name, args in (("watch_update", {"id": watch_id, "paused": True}), ("watch_delete", {"id": watch_id})):
            result = await other.call_tool(name, args)
            assert result.is_error is True and result.structured_content["error"] == "not_found"
    assert (await sql.fetch_one("SELECT status, deleted_ms FROM tw_watches WHERE id = {}", watch_id))[
        "status"
    ] == "running"


async def test_an_operator_token_lists_but_a_signed_in_token_also_changes(kernel):
    account = Account.create()
    async with wallet_client(kernel, account) as client:
        watch_id = (await client.call_tool("watch_create", ITEM)).structured_content["id"]
    agent_id = await kernel.agents.for_wallet(account.address)
    operator_token, _ = await kernel.auth.issue_access_token(agent_id, 600)
    async with Client(build_server(kernel, identity=BearerIdentity(operator_token)).server) as client:
        listed = await client.call_tool("watch_list", {})
        assert [w["id"] for w in listed.structured_content["watches"]] == [watch_id]
        for name, args in (
            ("watch_create", ITEM),
            ("watch_update", {"id": watch_id, "paused": True}),
            ("watch_delete", {"id": watch_id}),
        ):
            result = await client.call_tool(name, args)
            assert result.is_error is True and result.structured_content["error"] == "token_cannot_change_watches", name
            assert (
                "TOLLWAY_AGENT_KEY" in result.structured_content["message"]
                and "sign-in" in result.structured_content["message"]
            )
    assert (await sql.fetch_one("SELECT status FROM tw_watches WHERE id = {}", watch_id))["status"] == "running"

    token = await signed_in_token(kernel, account)
    async with Client(build_server(kernel, identity=BearerIdentity(token)).server) as client:
        paused = await client.call_tool("watch_update", {"id": watch_id, "paused": True})
        assert paused.is_error is False and paused.structured_content["pause_reason"] == "agent"
        created = await client.call_tool("watch_create", {**ITEM, "key": "ITEM-4"})
        assert created.is_error is False, created.structured_content
    assert int((await sql.fetch_one("SELECT count(*) AS n FROM tw_watches WHERE agent_id = {}", agent_id))["n"]) == 2


async def test_without_an_identity_nothing_is_changed_or_listed(kernel):
    async with Client(build_server(kernel).server) as client:
        for name, args in (("watch_create", ITEM), ("watch_list", {})):
            result = await client.call_tool(name, args)
            assert result.is_error is True and result.structured_content["error"] == "unauthorized"
            assert "TOLLWAY_AGENT_KEY" in result.structured_content["message"]
    assert await sql.fetch("SELECT id FROM tw_watches") == []


async def test_the_tools_are_listed_and_described(kernel):
    async with wallet_client(kernel) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert {"watch_create", "watch_list", "watch_update", "watch_delete"} <= set(listed)
        assert "item test_feed" in listed["watch_create"].description
        assert listed["watch_update"].input_schema["required"] == ["id"]
        assert listed["watch_delete"].annotations.destructive_hint is True
        described = (await client.call_tool("describe_tool", {"name": "watch_create"})).structured_content
        assert (
            described["output_schema"]["required"][0] == "id"
            and "webhook_secret" in described["output_schema"]["properties"]
        )
