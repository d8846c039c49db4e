"""web_read through the whole job machinery: paid with x402 in `X-Payment-Proof`
(or credits), accepted with 202, run by a worker, polled to its result. The page
is served by a local HTTP server on 127.0.0.1 (private addresses allowed by the
plugin's setting for this test); nothing reaches the internet."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from eth_account import Account

from tollway.testing import http_client, pay_402, wait_for_job, worker_for

OPERATOR = {"Authorization": "Bearer test-operator-token"}
PAGE = b"""<!doctype html><html><head><title>Harbour ferry notice</title>
<meta name="description" content="Timetable changes for the harbour ferry."></head>
<body><nav><a href="/">Home</a> | <a href="/news">News</a></nav>
<article><h1>Harbour ferry notice</h1>
<p>From Monday the morning ferry leaves the north quay at 07:40 instead of 08:00, because the tide tables moved.</p>
<p>The evening crossing keeps its usual time, and tickets bought before the change remain valid on either sailing.</p>
</article><footer>Copyright the harbour office</footer></body></html>"""


class Page(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/notice"
    server.shutdown()
    server.server_close()


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(installed={"tollway_web"}, env={"TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES": "true"})


async def finished(client, request_id: str, headers: dict[str, str]) -> dict:
    """The job once it completed or failed (polled every 20 ms, up to 8 s)."""
    return await wait_for_job(client, request_id, headers, tries=400, every_s=0.02)


async def test_paid_web_read_runs_as_a_job(kernel, page_url):
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/web-read", json={"url": page_url})
        assert quote.status_code == 402 and quote.json()["amount_usdc"] == "0.020000"
        accepted = await client.post(
            "/v1/tools/web-read",
            json={"url": page_url},
            headers={"X-Payment-Proof": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])},
        )
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        assert body["tool"] == "web_read" and body["status"] == "processing" and body["receipt_id"]
        worker = worker_for(kernel, poll_s=0.05)
        worker.start()
        try:
            job = await finished(client, body["request_id"], {"X-Agent-ID": payer.address})
        finally:
            await worker.stop()
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["url"] == page_url and result["truncated"] is False and result["screenshot_url"] is None
    assert result["metadata"]["statusCode"] == 200 and result["metadata"]["title"] == "Harbour ferry notice"
    assert "07:40" in result["markdown"] and "Copyright the harbour office" not in result["markdown"]
    receipt = await kernel.receipts.get(body["receipt_id"])
    assert receipt["status"] == "settled" and receipt["execution_status"] == "completed"


async def test_unreachable_target_fails_the_job_and_refunds(kernel):
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1"}, headers=OPERATOR
        )
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        accepted = (
            await client.post("/v1/tools/web-read", json={"url": "https://no-such-host.invalid/page"}, headers=auth)
        ).json()
        worker = worker_for(kernel, poll_s=0.05)
        worker.start()
        try:
            job = await finished(client, accepted["request_id"], auth)
        finally:
            await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert job["status"] == "failed" and job["error_code"] == "target_unreachable"
    assert job["error"].endswith(f"(ref: {accepted['request_id']})")
    assert balance["credits_balance"] == "1.000000"


async def test_acceptance_says_processing_as_the_spec_shows_for_web_read(kernel, page_url):
    """Spec: web read answers 202 `{request_id, status: processing, tool: web_read, message}`
    (research stays `pending`): the status comes from the tool's declaration, on HTTP
    (credits too), in the OpenAPI 202 schema and in the MCP output schema."""
    from mcp import Client

    from tollway.testing import credits_session, mcp_server_for

    assert kernel.tools["web_read"].accepted_status == "processing"
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = await client.post("/v1/tools/web-read", json={"url": page_url}, headers=auth)
        doc = (await client.get("/schema/openapi.json")).json()
    assert accepted.status_code == 202, accepted.text
    body = accepted.json()
    assert (body["status"], body["tool"]) == ("processing", "web_read") and body["request_id"] and body["message"]
    schema = doc["paths"]["/v1/tools/web-read"]["post"]["responses"]["202"]["content"]["application/json"]["schema"]
    assert {"type": "object", "properties": {"status": {"type": "string", "enum": ["processing"]}}} in schema["allOf"]
    async with Client(mcp_server_for(kernel)) as mcp:
        described = await mcp.call_tool("describe_tool", {"name": "web_read"})  # output schemas are served on demand
    status = described.structured_content["output_schema"]["properties"]["status"]
    assert "processing" in status["enum"] and status["description"].startswith("`processing` when accepted")
