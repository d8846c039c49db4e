"""The MCP front on its real transports, through the SDK's own `Client`: Streamable
HTTP at /mcp of the app served by uvicorn on 127.0.0.1 (both protocol eras, bearer
access tokens, DNS-rebinding protection, several apps in one process), stdio
against the `tollway mcp` command (an access token or a wallet key in
TOLLWAY_AGENT_KEY), and parity with the HTTP front for every tool with examples."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from eth_account import Account
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.support.echo_plugin import EchoPlugin
from tests.support.installed import with_test_plugins
from tests.support.jobs_plugin import JobsPlugin
from tests.support.lookup_plugin import LookupPlugin, word_list_app, word_list_transport
from tests.support.serving import serve_app
from tollway._runtime.service import http_app
from tollway.testing import credits_session, settings_for

VOLATILE = {"request_id", "receipt_id", "message", "retrieved_at"}  # ids and times differ by nature


def mcp_client(base_url: str, token: str | None = None, *, mode: str = "auto", host: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if host:
        headers["Host"] = host
    http = httpx2.AsyncClient(headers=headers, timeout=30.0)
    return Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode)


@pytest.fixture
async def kernel(kernel_factory):
    plugins = [("echo", EchoPlugin()), ("jobs", JobsPlugin()), ("lookup", LookupPlugin())]
    return await kernel_factory(plugins=plugins, transport=word_list_transport())


# -- Streamable HTTP ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_streamable_http_pays_with_the_bearer_token(kernel, mode):
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as http:
            agent_id, auth = await credits_session(http, "0.05")
        token = auth["Authorization"][len("Bearer ") :]
        async with mcp_client(base_url, token, mode=mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            paid = await client.call_tool("echo_words", {"text": "over http"})
            balance = await client.call_tool("balance", {})
        async with mcp_client(base_url, mode=mode) as anonymous:
            quote = await anonymous.call_tool("flaky", {"text": "fine"})
    assert {"echo_words", "lookup_word", "balance"} <= names
    assert paid.is_error is False and paid.structured_content["result"] == {"text": "over http", "words": 2}
    receipt = await kernel.receipts.get(paid.meta["tollway/receipt_id"])
    assert receipt["agent_id"] == agent_id and receipt["payment_method"] == "credits"
    assert balance.structured_content["credits_balance"] == "0.049000"
    assert quote.is_error and quote.structured_content["resource"]["url"] == f"{base_url}/v1/tools/test/flaky"


async def test_client_info_and_other_headers_never_identify_the_payer(kernel):
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        wallet = Account.create().address
        http = httpx2.AsyncClient(headers={"X-Agent-ID": wallet}, timeout=30.0)
        async with Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy") as client:
            balance = await client.call_tool("balance", {})
    assert balance.is_error and balance.structured_content["error"] == "unauthorized"


async def test_dns_rebinding_protection_with_configurable_hosts(kernel):
    default_app = http_app(kernel, manage_kernel=False)
    custom_app = http_app(kernel, manage_kernel=False, mcp_allowed_hosts=["tools.example:*"])
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with (
        serve_app(default_app) as one,
        serve_app(custom_app) as two,
    ):  # two apps, two session managers, one process
        port_two = two.rsplit(":", 1)[1]
        async with httpx.AsyncClient() as http:
            ok = await http.post(f"{one}/mcp", json=init, headers=headers)
            rebound = await http.post(f"{one}/mcp", json=init, headers={**headers, "Host": "attacker.example"})
            foreign_page = await http.post(
                f"{one}/mcp", json=init, headers={**headers, "Origin": "http://attacker.example"}
            )
            loopback_on_custom = await http.post(f"{two}/mcp", json=init, headers=headers)
            custom_ok = await http.post(
                f"{two}/mcp", json=init, headers={**headers, "Host": f"tools.example:{port_two}"}
            )
    assert ok.status_code == 200
    assert rebound.status_code == 421
    assert foreign_page.status_code == 403
    assert loopback_on_custom.status_code == 421
    assert custom_ok.status_code == 200


# -- parity with the HTTP front ------------------------------------------------------------------
def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


async def test_parity_structured_answer_equals_http_data_and_receipts_match(kernel):
    async with (
        serve_app(http_app(kernel, manage_kernel=False)) as base_url,
        httpx.AsyncClient(base_url=base_url) as http,
    ):
        _, auth = await credits_session(http, "1")
        token = auth["Authorization"][len("Bearer ") :]
        compared = []
        async with mcp_client(base_url, token) as client:
            # every tool with examples (the lookup tool's upstream is the test word list service)
            tools = [t for t in kernel.tools.values() if t.family in ("echo", "jobs", "lookup")]
            for tool in sorted(tools, key=lambda t: t.name):
                for n, example in enumerate(tool.examples):
                    args = dict(example.input)
                    key = {"Idempotency-Key": f"parity-{tool.name}-{n}"} if tool.idempotency == "required" else {}
                    resp = await http.post(tool.path, json=args, headers={**auth, **key})
                    assert resp.status_code in (200, 202), (tool.name, resp.text)
                    over_http = resp.json()["data"] if resp.status_code == 200 else resp.json()
                    mcp_args = {**args, "idempotency_key": f"parity-mcp-{tool.name}-{n}"} if key else args
                    result = await client.call_tool(tool.name, mcp_args)
                    assert result.is_error is False, (tool.name, result.structured_content)
                    over_mcp = result.structured_content
                    assert _normalised(over_mcp) == _normalised(over_http), tool.name
                    http_receipt = await kernel.receipts.get(over_http["receipt_id"])
                    mcp_receipt = await kernel.receipts.get(over_mcp["receipt_id"])
                    assert mcp_receipt["amount_usdc"] == http_receipt["amount_usdc"], tool.name
                    assert mcp_receipt["tool"] == http_receipt["tool"] == tool.name
                    compared.append(tool.name)
    assert "lookup_word" in compared and "echo_words" in compared and "add_numbers" in compared


# -- stdio: `tollway mcp` ------------------------------------------------------------------------------
def tollway_mcp(tmp_path: Path, db_kind: str, **env: str) -> StdioServerParameters:
    settings = settings_for(tmp_path, db_kind)
    full = {k: v for k, v in settings.env.items() if k.startswith("TOLLWAY_")}
    full.update(env)
    full = with_test_plugins(full, tmp_path)  # the child loads the kernel's test plugins as installed ones
    return StdioServerParameters(
        command=str(Path(sys.executable).parent / "tollway"), args=["mcp", "--workers", "0"], env=full, cwd=os.getcwd()
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_tollway_mcp_pays_from_a_wallet_keys_credits(kernel, tmp_path, db_kind, mode):
    account = Account.create()
    served: list[str] = []
    async with serve_app(word_list_app(served)) as words_url:
        async with (
            serve_app(http_app(kernel, manage_kernel=False)) as base_url,
            httpx.AsyncClient(base_url=base_url) as http,
        ):
            await credits_session(http, "0.05", wallet=account.address)
        params = tollway_mcp(tmp_path, db_kind, TOLLWAY_AGENT_KEY=account.key.hex(), TOLLWAY_LOOKUP_API_URL=words_url)
        async with Client(params, mode=mode) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            paid = await client.call_tool("lookup_word", {"word": "ship"})
            balance = await client.call_tool("balance", {})
            receipts = await client.call_tool("receipts", {})
    assert "lookup_word" in names and "job_status" in names
    assert paid.is_error is False, paid.structured_content
    assert paid.structured_content["tool"] == "lookup_word" and paid.structured_content["status"] == "completed"
    assert paid.structured_content["result"]["word"] == "ship"
    assert served == ["/v1/words"]
    assert balance.structured_content["credits_balance"] == "0.045000"
    assert balance.structured_content["address"] == account.address
    assert [r["receipt_id"] for r in receipts.structured_content["receipts"]] == [paid.meta["tollway/receipt_id"]]
    receipt = await kernel.receipts.get(paid.meta["tollway/receipt_id"])
    assert receipt["payment_method"] == "credits"


async def test_stdio_tollway_mcp_with_an_access_token_and_x402_fallback(kernel, tmp_path, db_kind):
    async with (
        serve_app(http_app(kernel, manage_kernel=False)) as base_url,
        httpx.AsyncClient(base_url=base_url) as http,
    ):
        agent_id, auth = await credits_session(http, "0.001")
    params = tollway_mcp(tmp_path, db_kind, TOLLWAY_AGENT_KEY=auth["Authorization"][len("Bearer ") :])
    async with Client(params) as client:
        balance = await client.call_tool("balance", {})
        quote = await client.call_tool("lookup_word", {"word": "ship"})
    assert balance.structured_content["agent_id"] == agent_id
    assert balance.structured_content["credits_balance"] == "0.001000"
    assert quote.is_error and quote.structured_content["accepts"][0]["amount"] == "5000"
    assert quote.structured_content["resource"]["url"] == "mcp://tollway/v1/tools/test/lookup"


async def test_tollway_mcp_refuses_a_malformed_agent_key(tmp_path):
    import asyncio

    env = {
        **os.environ,
        **{k: v for k, v in settings_for(tmp_path, "sqlite").env.items() if k.startswith("TOLLWAY_")},
        "TOLLWAY_AGENT_KEY": "not-a-key",
    }
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "tollway"),
        "mcp",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 2
    assert "TOLLWAY_AGENT_KEY" in err.decode()


# -- the README's client configuration -------------------------------------------------------------
def readme_mcp_configs() -> list[dict]:
    import json
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## MCP", 1)[1].split("\n## ", 1)[0]
    return [
        json.loads(block)["mcpServers"]["tollway"] for block in re.findall(r"```json\n(.*?)```", section, re.DOTALL)
    ]


async def test_readme_mcp_configurations_work(kernel, tmp_path, db_kind):
    stdio, http_config = readme_mcp_configs()
    assert Path(stdio["command"]).name == "tollway" and set(stdio["env"]) == {"TOLLWAY_HOME", "TOLLWAY_AGENT_KEY"}
    assert http_config["type"] == "http" and http_config["url"].endswith("/mcp")
    async with serve_app(http_app(kernel, manage_kernel=False)) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as http:
            agent_id, auth = await credits_session(http, "0.01")
        token = auth["Authorization"][len("Bearer ") :]
        headers = {k: v.replace("tw_at_…", token) for k, v in http_config["headers"].items()}
        url = base_url + http_config["url"].split("8402", 1)[1]
        async with Client(
            streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30.0))
        ) as client:
            over_http = await client.call_tool("balance", {})
    params = tollway_mcp(
        tmp_path, db_kind, TOLLWAY_AGENT_KEY=stdio["env"]["TOLLWAY_AGENT_KEY"].replace("tw_at_…", token)
    )
    params.args = [*stdio["args"], "--workers", "0"]
    async with Client(params) as client:
        over_stdio = await client.call_tool("balance", {})
    assert over_http.structured_content["agent_id"] == over_stdio.structured_content["agent_id"] == agent_id
