"""research over MCP: a wallet pays for a research job in one call (quote, signed payment,
acceptance), a worker runs it against a SearXNG-speaking server and the local article site
on 127.0.0.1, and `job_status` gives the report, every citation naming a source read."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest
from eth_account import Account
from mcp import Client

from tollway._core.basics.money import to_micro
from tollway._mcp_server import WalletIdentity, build_server
from tollway.testing import worker_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "web" / "tests"))
from research_support import serve_site  # noqa: E402
from test_research_tool import env_for, searxng  # noqa: E402,F401 - the SearXNG stand-in fixture


@pytest.fixture(scope="module")
def site():
    """The local article site (plugins/web/tests/research_pages.py) on 127.0.0.1."""
    yield from serve_site()


async def test_a_wallet_pays_for_research_over_mcp_and_reads_the_report(kernel_factory, searxng) -> None:
    url, _ = searxng
    kernel = await kernel_factory(installed={"tollway_web"}, env=env_for(url))
    wallet = Account.create()
    await kernel.accounts.fund_chain(wallet.address, to_micro("1"))
    worker = worker_for(kernel)
    async with Client(build_server(kernel, identity=WalletIdentity(wallet, kernel.network.chain_id)).server) as client:
        accepted = await client.call_tool("research", {"topic": "honeybee colony collapse"})
        assert accepted.is_error is False, accepted.structured_content
        request_id = accepted.structured_content["request_id"]
        worker.start()
        try:
            for _ in range(600):
                job = (await client.call_tool("job_status", {"request_id": request_id})).structured_content
                if job["status"] in ("completed", "failed"):
                    break
                await asyncio.sleep(0.05)
        finally:
            await worker.stop()
    assert (
        accepted.structured_content["status"] == "pending" and accepted.meta["x402/payment-response"]["success"] is True
    )
    assert job["status"] == "completed", job
    report, sources = job["result"]["report"], job["result"]["sources"]
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", report)}
    assert cited and cited <= {s["n"] for s in sources} and 5 <= len(sources) <= 10
    assert await kernel.backend.on_chain_balance(wallet.address) == to_micro("1") - to_micro("0.15")
