"""Syrupy snapshot of the MCP `tools/list` (the kernel's test tools and the free
reads), as the SDK's own client receives it: names, descriptions with prices and
limits, input/output schemas, annotations and `_meta`."""

from __future__ import annotations

from mcp import Client

from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tollway._mcp_server import build_server


async def test_tools_list_snapshot(kernel_factory, snapshot):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin()), ("jobs", JobsPlugin())])
    async with Client(build_server(kernel).server, mode="legacy") as client:
        listed = await client.list_tools()
    tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
    assert tools == snapshot
