"""Rate limits through the HTTP front: the RateLimit-* headers on every answer of
a limited route (errors included), 429 with retry_after and Retry-After, per
proven identity or per IP, and two API processes on PostgreSQL sharing one count."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from eth_account import Account

from tests.kernel.test_unproven_identity import token_session
from tests.support.echo_plugin import EchoPlugin
from tollway.testing import http_client

DAY = 86_400  # a day-long window: a test cannot straddle a window boundary


async def test_tool_route_counts_every_answer_and_refuses_past_the_limit(kernel_factory):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())], env={"TOLLWAY_RATE_LIMIT_LOOKUP": f"3/{DAY}"})
    async with http_client(kernel) as client:
        answers = [await client.post("/v1/tools/test/echo", json={"text": "hi"}) for _ in range(2)]
        answers.append(await client.post("/v1/tools/test/echo", json={"text": ""}))  # a 400 is counted too
        refused = await client.post("/v1/tools/test/echo", json={"text": "hi"})
        bare_agent = await client.post(
            "/v1/tools/test/echo", json={"text": "hi"}, headers={"X-Agent-ID": Account.create().address}
        )
        _, token = await token_session(client)
        proven_agent = await client.post("/v1/tools/test/echo", json={"text": "hi"}, headers=token)
    assert [a.status_code for a in answers] == [402, 402, 400]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["2", "1", "0"]
    assert all(a.headers["RateLimit-Limit"] == "3" and int(a.headers["RateLimit-Reset"]) >= 1 for a in answers)
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"] == "rate_limit_exceeded" and body["message"] and body["retry_after"] >= 1
    assert refused.headers["Retry-After"] == str(body["retry_after"])
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert bare_agent.status_code == 429  # a bare X-Agent-ID proves nothing: the IP's count
    assert proven_agent.status_code == 402  # an access token is counted on its own


async def test_free_reads_have_their_own_category(kernel_factory):
    kernel = await kernel_factory(env={"TOLLWAY_RATE_LIMIT_FREE_READ": f"2/{DAY}"})
    agent = {"X-Agent-ID": Account.create().address}
    async with http_client(kernel) as client:
        reads = [await client.get("/v1/balance", headers=agent) for _ in range(2)]
        refused = await client.get("/v1/analytics/receipts", headers=agent)
        unlimited = await client.get("/v1/receipts/keys")
    assert [r.status_code for r in reads] == [200, 200]
    assert reads[1].headers["RateLimit-Remaining"] == "0"
    assert refused.status_code == 429 and refused.headers["RateLimit-Limit"] == "2"
    assert unlimited.status_code == 200 and "RateLimit-Limit" not in unlimited.headers


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_twenty_clients_on_two_api_processes_share_one_limit(kernel_factory):
    env = {"TOLLWAY_RATE_LIMIT_FREE_READ": f"10/{DAY}"}
    first = await kernel_factory(env=env)
    second = await kernel_factory(env=env)  # its own pool and limiter: a second API process
    agent = {"X-Agent-ID": Account.create().address}
    async with http_client(first) as a, http_client(second) as b:

        async def client(i: int) -> list[httpx.Response]:
            api = a if i % 2 else b
            return [await api.get("/v1/balance", headers=agent) for _ in range(3)]

        answers = [r for batch in await asyncio.gather(*[client(i) for i in range(20)]) for r in batch]
    passed = [r for r in answers if r.status_code == 200]
    refused = [r for r in answers if r.status_code == 429]
    assert len(passed) == 10 and len(refused) == 50
    assert sorted(int(r.headers["RateLimit-Remaining"]) for r in passed) == list(range(10))
    assert all(int(r.headers["RateLimit-Remaining"]) >= 0 for r in answers)
