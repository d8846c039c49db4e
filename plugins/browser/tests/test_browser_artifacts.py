"""Artifacts after the task: the owner gets a fresh signed link once the task's has expired
(`POST /v1/artifacts/{id}/link`, by access token, by read proof, over MCP; anyone else 404);
the 30-day purge deletes what is older and keeps the rest; a screenshot past 10 MB fails its
step and is not kept. Real tasks in a real Chromium, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time

from browser_support import balance, run_task
from eth_account import Account
from mcp import Client

from tollway.testing import credits_session, http_client, mcp_server_for, proof_headers
from tollway_browser import artifacts, session
from tollway_browser.tables import Artifact

DAY_MS = 24 * 3600 * 1000


async def test_the_owner_gets_a_fresh_link_once_the_tasks_link_expired(kernel_factory, site):
    kernel = await kernel_factory(
        installed={"tollway_browser"},
        env={"TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow, "TOLLWAY_BROWSER_ARTIFACT_LINK_S": "4"},
    )
    owner = Account.create()
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1", wallet=owner.address)
        _, other = await credits_session(client, "1")
        job = await run_task(kernel, client, auth, {"start_url": f"{site.base}/fares", "steps": [{"action": "pdf"}]})
        (pdf,) = job["result"]["artifacts"]
        path = f"/v1/artifacts/{pdf['id']}/link"
        at_first = await client.get(pdf["url"])
        for _ in range(80):  # the task's link lapses after its 4 s
            expired = await client.get(pdf["url"])
            if expired.status_code != 200:
                break
            await asyncio.sleep(0.1)
        fresh = await client.post(path, headers=auth)
        by_fresh_link = await client.get(fresh.json()["url"])
        proof = proof_headers(owner, scope="read", method="POST", path=path)
        by_proof = await client.post(path, headers=proof)
        stranger = await client.post(path, headers=other)
        nobody = await client.post(path)
        bare = await client.post(path, headers={"X-Agent-ID": owner.address})
        unknown = await client.post("/v1/artifacts/art_000000000000000000000000/link", headers=auth)
        token = auth["Authorization"].split()[1]
        async with Client(mcp_server_for(kernel, token=token)) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            over_mcp = await mcp.call_tool("browser_artifact_link", {"artifact_id": pdf["id"]})
        by_mcp_link = await client.get(over_mcp.structured_content["url"])
    assert at_first.status_code == 200 and at_first.content.startswith(b"%PDF")
    assert expired.status_code == 404, expired.text
    assert fresh.status_code == 200, fresh.text
    body = fresh.json()
    assert set(body) == {"id", "url", "expires_at"} and body["id"] == pdf["id"]
    assert body["url"].startswith(f"/v1/artifacts/{pdf['id']}?expires=") and body["url"] != pdf["url"]
    assert body["expires_at"] > pdf["expires_at"]
    assert by_fresh_link.status_code == 200 and by_fresh_link.content == at_first.content
    assert by_proof.status_code == 200, by_proof.text
    assert by_proof.json()["id"] == pdf["id"]
    assert stranger.status_code == 404 and unknown.status_code == 404
    assert nobody.status_code == 401 and bare.status_code == 401
    assert "browser_artifact_link" in names and not over_mcp.is_error, over_mcp.content
    assert by_mcp_link.status_code == 200 and by_mcp_link.content == at_first.content


async def test_the_purge_deletes_artifacts_older_than_30_days_and_keeps_the_rest(kernel, site):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        steps = [{"action": "screenshot"}, {"action": "pdf"}, {"action": "screenshot", "full_page": True}]
        job = await run_task(kernel, client, auth, {"start_url": f"{site.base}/fares", "steps": steps})
        old, edge, fresh = job["result"]["artifacts"]
        now = int(time.time() * 1000)
        await Artifact.update({Artifact.created_ms: now - 30 * DAY_MS - 60_000}).where(Artifact.id == old["id"])
        await Artifact.update({Artifact.created_ms: now - 30 * DAY_MS + 60_000}).where(Artifact.id == edge["id"])
        (purge,) = [t for t in kernel.periodic_tasks if t.name == "browser_artifacts_purge"]
        await purge.run(kernel.context)
        reads = [(await client.get(f"/v1/artifacts/{a['id']}", headers=auth)).status_code for a in (old, edge, fresh)]
        left = await Artifact.select(Artifact.id).where(Artifact.request_id == job["request_id"])
    assert purge.run is artifacts.purge and purge.interval_s == 3600
    assert reads == [404, 200, 200]
    assert {r["id"] for r in left} == {edge["id"], fresh["id"]}


async def test_a_screenshot_past_10_mb_fails_its_step_and_is_not_kept(kernel, site):
    steps = [
        {"action": "wait_for", "selector": "#done"},
        {"action": "screenshot", "full_page": True},
        {"action": "pdf"},
    ]
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job = await run_task(kernel, client, auth, {"start_url": f"{site.base}/noise", "steps": steps})
        left = await balance(client, auth)
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["status"] == "step_failed" and result["artifacts"] == []
    assert [(s["action"], s["status"]) for s in result["steps"]] == [
        ("start", "ok"),
        ("wait_for", "ok"),
        ("screenshot", "failed"),
    ]
    assert result["steps"][-1]["detail"] == "the screenshot is larger than 10 MB"
    assert session.MAX_ARTIFACT_BYTES == 10 * 1024 * 1024  # the real cap: the page's PNG is past it
    assert left == "0.920000"  # the start page opened: charged
