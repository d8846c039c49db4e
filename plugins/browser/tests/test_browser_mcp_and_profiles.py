"""browser_task and the browser_profiles_* tools over MCP, and two tasks on one profile at
once running one after the other; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from browser_support import finished
from mcp import Client

from tollway.testing import credits_session, http_client, mcp_server_for, worker_for


def data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def test_profiles_and_a_task_over_mcp(kernel, site):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
    token = auth["Authorization"].split()[1]
    worker = worker_for(kernel, poll_s=0.05)
    worker.start()
    try:
        async with Client(mcp_server_for(kernel, token=token)) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            made = data(await mcp.call_tool("browser_profiles_create", {"name": "ferry"}))
            listed = data(await mcp.call_tool("browser_profiles_list", {}))
            read = data(await mcp.call_tool("browser_profiles_get", {"profile_id": made["id"]}))
            steps = [{"action": "extract", "what": "table", "selector": "#fares", "save_as": "fares"}]
            accepted = data(
                await mcp.call_tool(
                    "browser_task", {"start_url": f"{site.base}/fares", "steps": steps, "profile_id": made["id"]}
                )
            )
            async with http_client(kernel) as client:
                job = await finished(client, accepted["request_id"], auth)
            used = data(await mcp.call_tool("browser_profiles_get", {"profile_id": made["id"]}))
            deleted = data(await mcp.call_tool("browser_profiles_delete", {"profile_id": made["id"]}))
            missing = await mcp.call_tool("browser_profiles_get", {"profile_id": made["id"]})
    finally:
        await worker.stop()
    assert {"browser_task", *(f"browser_profiles_{n}" for n in ("create", "list", "get", "delete"))} <= names
    assert "browser_artifact_get" not in names  # bytes, not a tool: the result's signed links serve them
    assert listed == {"profiles": [made]} and read == made and made["last_used_at"] is None
    assert accepted["status"] == "pending" and accepted["tool"] == "browser_task"
    assert job["status"] == "completed" and job["result"]["extracts"][0]["rows"][0] == ["Route", "Fare (USD)", "Notes"]
    assert used["last_used_at"] is not None
    assert deleted == {"id": made["id"], "deleted": True} and missing.is_error


async def test_two_tasks_on_one_profile_run_one_after_the_other(kernel, site):
    site.gate_open = False
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        profile = (await client.post("/v1/browser/profiles", json={"name": "one at a time"}, headers=auth)).json()
        body = {
            "start_url": f"{site.base}/gate",
            "profile_id": profile["id"],
            "steps": [{"action": "wait_for", "selector": "#ready", "timeout_s": 30}],
        }
        worker = worker_for(kernel, poll_s=0.05)
        worker.start()
        try:
            first = (await client.post("/v1/tools/browser/task", json=body, headers=auth)).json()
            second = (await client.post("/v1/tools/browser/task", json=body, headers=auth)).json()
            running = {"waiting for the profile", "step 1/1: wait_for"}
            for _ in range(150):  # both claimed at once: one browser waits on the gate, the other task on it
                messages = {
                    (await client.get(f"/v1/requests/{j['request_id']}", headers=auth)).json().get("message")
                    for j in (first, second)
                }
                if messages == running:
                    break
                await asyncio.sleep(0.4)
            await asyncio.sleep(1)  # and it stays so while the gate is shut
            still = {
                (await client.get(f"/v1/requests/{j['request_id']}", headers=auth)).json().get("message")
                for j in (first, second)
            }
            site.gate_open = True
            jobs = [await finished(client, j["request_id"], auth) for j in (first, second)]
        finally:
            await worker.stop()
    assert messages == running and still == running, (messages, still)
    assert [j["status"] for j in jobs] == ["completed", "completed"], jobs
