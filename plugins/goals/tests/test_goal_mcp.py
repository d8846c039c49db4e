"""Goals over MCP (both databases): a goal created and paid from credits through the
`compute` tool, an event sent and the cases read through the goal tools, with the same
refusals as HTTP (another agent's goal is not found)."""

from __future__ import annotations

import json

from goal_support import goals_kernel
from mcp import Client

from tollway.testing import credits_session, http_client, mcp_server_for


def data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def test_a_goal_over_mcp(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client, "20")
        _other, other_headers = await credits_session(client, "1")
    token = headers["Authorization"].split()[1]
    async with Client(mcp_server_for(kernel, token=token)) as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        created = data(
            await mcp.call_tool("compute", {"goal": "Keep the invoices paid.", "params": {"budget_usdc": "6"}})
        )
        gid = created["goal_id"]
        sent = data(
            await mcp.call_tool(
                "goal_event", {"goal_id": gid, "event_id": "e1", "case_key": "inv-1", "task": "Chase invoice 1"}
            )
        )
        again = data(
            await mcp.call_tool(
                "goal_event", {"goal_id": gid, "event_id": "e1", "case_key": "inv-1", "task": "Chase invoice 1"}
            )
        )
        listing = data(await mcp.call_tool("goal_cases", {"goal_id": gid, "state": "open", "limit": "10"}))
        record = data(await mcp.call_tool("goal_case", {"goal_id": gid, "key": "inv-1"}))
        goal = data(await mcp.call_tool("goal_get", {"goal_id": gid}))
        bad = await mcp.call_tool("goal_cases", {"goal_id": gid, "limit": "500"})
        cancelled = data(await mcp.call_tool("goal_cancel", {"goal_id": gid}))
        ended = await mcp.call_tool("goal_event", {"goal_id": gid, "event_id": "e2", "task": "More"})
    async with Client(mcp_server_for(kernel, token=other_headers["Authorization"].split()[1])) as mcp:
        hidden = await mcp.call_tool("goal_cases", {"goal_id": gid})
        not_theirs = await mcp.call_tool("goal_cancel", {"goal_id": gid})
    assert {"compute", "goal_get", "goal_cases", "goal_case", "goal_event", "goal_cancel"} <= names
    assert cancelled["data"]["status"] == "cancelled" and cancelled["data"]["returned_usdc"] == "6.000000"
    assert ended.is_error and "goal_ended" in json.dumps(
        ended.structured_content or [c.model_dump() for c in ended.content]
    )
    assert not_theirs.is_error and "not_found" in json.dumps(
        not_theirs.structured_content or [c.model_dump() for c in not_theirs.content]
    )
    assert created["tool"] == "compute" and gid.startswith("goal_")
    assert sent == {"target": "case", "case_key": "inv-1", "outcome": "created"} and again == sent
    assert [c["key"] for c in listing["data"]] == ["inv-1"] and listing["counts"] == {"open": 1}
    assert record["data"]["task"] == "Chase invoice 1" and record["data"]["decisions"] == []
    assert goal["data"]["budget_usdc"] == "6.000000"
    assert bad.is_error and "limit" in json.dumps(bad.structured_content or [c.model_dump() for c in bad.content])
    assert hidden.is_error and "not_found" in json.dumps(
        hidden.structured_content or [c.model_dump() for c in hidden.content]
    )
