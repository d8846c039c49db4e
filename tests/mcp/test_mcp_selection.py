"""Tool selection (`tollway mcp --tools`, `/mcp?tools=`): only the selected tools are listed
and callable, a family selects its tools, an unknown name is refused before anything is
served (HTTP: a 400 in the service's error shape)."""

from __future__ import annotations

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tests.support.lookup_plugin import LookupPlugin, word_list_transport
from tests.support.serving import serve_app
from tollway._mcp_server import build_server
from tollway._mcp_server.selection import UnknownTools, resolve
from tollway._runtime.service import http_app
from tollway.testing import credits_session

ECHO = {"echo_words", "flaky", "echo_keyed"}


@pytest.fixture
async def kernel(kernel_factory):
    plugins = [("echo", EchoPlugin()), ("jobs", JobsPlugin()), ("lookup", LookupPlugin())]
    return await kernel_factory(plugins=plugins, transport=word_list_transport())


async def names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def test_items_are_tools_or_families_and_unknown_ones_are_named(kernel):
    assert resolve(kernel, "echo, lookup_word") == ECHO | {"lookup_word", "describe_tool"}
    assert resolve(kernel, "balance") == {"balance", "describe_tool"}
    # a job tool brings job_status: its result outlives the call that started it
    assert resolve(kernel, "add_numbers") == {"add_numbers", "job_status", "describe_tool"}
    assert {"balance", "receipts", "job_status", "watch_create"} <= resolve(kernel, "kernel")
    with pytest.raises(UnknownTools) as err:
        resolve(kernel, "echo,lookup_wrd,nope")
    assert err.value.unknown == ["lookup_wrd", "nope"]
    assert str(err.value).startswith("no tool or family 'lookup_wrd' (did you mean lookup_word?); families: ")
    assert "\n" not in str(err.value)
    with pytest.raises(UnknownTools):
        resolve(kernel, " , ")


async def test_only_selected_tools_are_listed_described_and_callable(kernel):
    mcp = build_server(kernel, tools=resolve(kernel, "echo"))
    async with Client(mcp.server) as client:
        listed = await names(client)
        with pytest.raises(MCPError) as unselected:
            await client.call_tool("lookup_word", {"word": "ship"})
        with pytest.raises(MCPError) as missing:
            await client.call_tool("no_such_tool", {})
        described = await client.call_tool("describe_tool", {"name": "lookup_word"})
        echo = await client.call_tool("describe_tool", {"name": "echo_words"})
    assert listed == ECHO | {"describe_tool"}
    # an unselected tool is answered as one that does not exist
    assert unselected.value.error.code == missing.value.error.code
    assert str(unselected.value) == "Unknown tool: lookup_word"
    assert described.is_error and described.structured_content["details"][0]["message"] == "unknown tool"
    assert echo.is_error is False and echo.structured_content["name"] == "echo_words"


async def test_streamable_http_serves_the_selection_of_its_url(kernel):
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as http:
            _, auth = await credits_session(http, "0.05")
            refused = await http.post(
                "/mcp?tools=echo,nope",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream"},
            )

        def client(query: str) -> Client:
            session = httpx2.AsyncClient(headers=auth, timeout=30.0)
            return Client(streamable_http_client(f"{base_url}/mcp{query}", http_client=session))

        async with client("?tools=lookup,balance") as selected:
            listed = await names(selected)
            balance = await selected.call_tool("balance", {})
            with pytest.raises(MCPError) as unselected:
                await selected.call_tool("echo_words", {"text": "not selected"})
        async with client("") as everything:
            all_tools = await names(everything)
    assert listed == {"lookup_word", "balance", "describe_tool"}
    assert balance.is_error is False
    assert str(unselected.value) == "Unknown tool: echo_words"
    assert ECHO | {"lookup_word", "balance", "job_status"} <= all_tools
    assert refused.status_code == 400
    body = refused.json()
    assert body["error"] == "invalid_request" and body["message"].startswith("tools: no tool or family 'nope'")
    assert body["details"] == [{"field": "tools", "message": "unknown tool or family: nope"}]
