"""website_build and website_update over MCP: the update's `site_id` is an ordinary argument
there (HTTP carries it in the path); on SQLite and PostgreSQL."""

from __future__ import annotations

from mcp import Client
from site_support import FIVE_PAGES, finished

from tollway.testing import credits_session, http_client, mcp_server_for, worker_for


def data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def test_a_site_built_and_updated_over_mcp(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser"})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "20")
    token = auth["Authorization"].split()[1]
    worker = worker_for(kernel, poll_s=0.05)
    worker.start()
    try:
        async with Client(mcp_server_for(kernel, token=token)) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            accepted = data(await mcp.call_tool("website_build", FIVE_PAGES))
            async with http_client(kernel) as client:
                built = await finished(client, accepted["request_id"], auth)
                site_id = built["result"]["site_id"]
                change = {"site_id": site_id, "pages": [{"page": "contact", "content": "Call at the quay office."}]}
                again = data(await mcp.call_tool("website_update", change))
                updated = await finished(client, again["request_id"], auth)
                contact = (await client.get("/sites/harbour-ferries/contact.html")).text
                refused = await mcp.call_tool("website_update", {**change, "site_id": "site_nope"})
                left = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
    finally:
        await worker.stop()
    assert {"website_build", "website_update"} <= names
    assert "website_file" not in names and "website_home" not in names  # pages for people, not tools
    assert built["status"] == "completed" and updated["status"] == "completed", updated
    assert updated["result"]["version"] == 2 and "Call at the quay office." in contact
    assert refused.is_error and refused.structured_content["error"] == "not_found"
    assert left == "8.000000"  # 20 - 10 (build) - 2 (update); the refused update never charged
