"""web_search against local servers speaking SearXNG's JSON API and the Brave Search API
over real HTTP on 127.0.0.1 (answers in tests/fixtures/search, shaped as each provider
documents them): paid with `X-Payment-Proof` or credits, over HTTP and MCP; results
deduplicated and cut; refusals before payment; every provider failure mapped to its
code and never charged; the API key never in an answer, a receipt or a log line."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from eth_account import Account

from tollway import search_key
from tollway.testing import count_quotes, credits_session, http_client, pay_402, provider_cost_of, stored_facts

FIXTURES = Path(__file__).parent / "fixtures" / "search"
SEARXNG_BODY = (FIXTURES / "searxng_search.json").read_bytes()
BRAVE_BODY = (FIXTURES / "brave_web_search.json").read_bytes()
BRAVE_KEY = "brave-test-key-5f0c9a1e77d2"
PATH = "/v1/tools/search"


class Script:
    """What the stand-in answers next, and what it was asked."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.status = 200
        self.body: bytes | None = None  # None: the provider's fixture
        self.delay_s = 0.0
        self.headers: dict[str, str] = {}
        self.seen: list[dict[str, Any]] = []


class StandIn(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        script = self.script
        script.seen.append({"path": parts.path, "query": parse_qs(parts.query), "headers": dict(self.headers)})
        if parts.path == "/healthz":
            body, status = b"OK", 200
        elif parts.path == "/search":
            body, status = script.body if script.body is not None else SEARXNG_BODY, script.status
        elif parts.path == "/res/v1/web/search":
            if self.headers.get("X-Subscription-Token") != BRAVE_KEY:
                body, status = (
                    b'{"type": "ErrorResponse", "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID"}}',
                    401,
                )
            else:
                body, status = script.body if script.body is not None else BRAVE_BODY, script.status
        else:
            body, status = b"not found", 404
        if script.delay_s:
            time.sleep(script.delay_s)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in script.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def stand_in() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("Handler", (StandIn,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", script
    server.shutdown()
    server.server_close()


@pytest.fixture
def script(stand_in) -> Script:
    stand_in[1].reset()
    return stand_in[1]


def searxng_env(url: str, **more: str) -> dict[str, str]:
    return {"TOLLWAY_SEARCH_PROVIDER": "searxng", "TOLLWAY_SEARCH_SEARXNG_URL": url, **more}


def brave_env(url: str, **more: str) -> dict[str, str]:
    return {
        "TOLLWAY_SEARCH_PROVIDER": "brave",
        "TOLLWAY_SEARCH_BRAVE_API_URL": url,
        "TOLLWAY_SEARCH_BRAVE_API_KEY": BRAVE_KEY,
        **more,
    }


async def balance(client, headers) -> str:
    return (await client.get("/v1/balance", headers=headers)).json()["credits_balance"]


# -- happy paths ---------------------------------------------------------------------------
async def test_searxng_search_paid_with_x_payment_proof(kernel_factory, stand_in, script) -> None:
    url, _ = stand_in
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(url))
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    body = {"query": "harbour ferry timetable"}
    async with http_client(kernel) as client:
        quote = await client.post(PATH, json=body)
        assert quote.status_code == 402 and quote.json()["amount_usdc"] == "0.010000"
        paid = await client.post(
            PATH, json=body, headers={"X-Payment-Proof": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
        )
        assert paid.status_code == 200, paid.text
        data = paid.json()["data"]
        receipt = (await client.get(f"/v1/receipts/{data['receipt_id']}", headers={"X-Agent-ID": payer.address})).json()
    assert data["tool"] == "web_search" and data["status"] == "completed" and data["request_id"]
    assert data["query"] == "harbour ferry timetable"
    # four hits, the second the first page written differently: three results
    assert [r["url"] for r in data["results"]] == [
        "https://harbour.example.org/ferry/timetable/",
        "https://news.example.net/2026/tide-tables-move-morning-ferry",
        "http://quay.example.com/sailings",
    ]
    assert data["result_count"] == 3
    assert data["results"][0] == {
        "url": "https://harbour.example.org/ferry/timetable/",
        "title": "Ferry timetable - Harbour office",
        "description": "Sailings from the north quay, weekdays and weekends.",
    }
    assert receipt["status"] == "settled" and receipt["amount_usdc"] == "0.010000" and "provider_cost" not in receipt
    assert await provider_cost_of(data["receipt_id"]) == 0  # a self-hosted SearXNG costs nothing by default
    (asked,) = [s for s in script.seen if s["path"] == "/search"]
    assert asked["query"] == {"q": ["harbour ferry timetable"], "format": ["json"]}


async def test_brave_search_from_credits_sends_the_token_and_never_shows_it(
    kernel_factory, stand_in, script, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    url, _ = stand_in
    kernel = await kernel_factory(installed={"tollway_web"}, env=brave_env(url))
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(PATH, json={"query": "harbour ferry timetable", "max_results": 2}, headers=auth)
        assert resp.status_code == 200, resp.text
        data = resp.json()["data"]
        receipt = await client.get(f"/v1/receipts/{data['receipt_id']}", headers=auth)
        health = (await client.get("/healthz")).json()
        assert await balance(client, auth) == "0.990000"
    assert [r["url"] for r in data["results"]] == [
        "https://harbour.example.org/ferry/timetable/",
        "https://news.example.net/2026/tide-tables-move-morning-ferry",
    ]
    assert data["results"][0]["description"] == "Sailings from the north quay, weekdays and weekends."  # markup dropped
    assert data["result_count"] == 2
    assert await provider_cost_of(data["receipt_id"]) == 5_000  # Brave's default 0.005 a query, kept private
    assert "provider_cost" not in receipt.json() and "5000" not in receipt.text
    (asked,) = [s for s in script.seen if s["path"] == "/res/v1/web/search"]
    assert asked["query"] == {"q": ["harbour ferry timetable"], "count": ["4"]}
    assert asked["headers"]["X-Subscription-Token"] == BRAVE_KEY
    for text in (resp.text, receipt.text, json.dumps(health), caplog.text):
        assert BRAVE_KEY not in text
    (state,) = [p for p in health["providers"] if p["kind"] == "search"]
    assert state == {
        "kind": "search",
        "provider": "brave",
        "configured": True,
        "unset_settings": [],
        "available": ["brave", "searxng"],
    }


async def test_max_results_cuts_after_dedupe_and_facts_record_the_list(kernel_factory, stand_in, script) -> None:
    url, _ = stand_in
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(url))
    tool = kernel.tools["web_search"]
    async with http_client(kernel) as client:
        agent_id, auth = await credits_session(client, "1")
        one = await client.post(PATH, json={"query": "harbour ferry timetable", "max_results": 1}, headers=auth)
        assert one.status_code == 200, one.text
        assert [r["url"] for r in one.json()["data"]["results"]] == ["https://harbour.example.org/ferry/timetable/"]
        script.body = json.dumps(
            {"query": "q", "results": [{"url": "https://other.example.org/", "title": "Other", "content": "x"}]}
        ).encode()
        two = await client.post(PATH, json={"query": "harbour ferry timetable", "max_results": 1}, headers=auth)
        assert two.json()["data"]["result_count"] == 1
    key = search_key(tool.input_type(query="harbour ferry timetable", max_results=1))
    facts = await stored_facts("web_search", key)
    assert [f["value"]["urls"] for f in facts] == [
        ["https://harbour.example.org/ferry/timetable/"],
        ["https://other.example.org/"],
    ]
    assert all(f["owner"] == agent_id for f in facts)  # a provider's results are the caller's own


async def test_mcp_lists_the_tool_and_quotes_a_search(kernel_factory, stand_in, script) -> None:
    from mcp import Client

    from tollway.testing import mcp_server_for

    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(stand_in[0]))
    async with Client(mcp_server_for(kernel), mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        quoted = await client.call_tool("web_search", {"query": "harbour ferry timetable", "max_results": 2})
    assert listed["web_search"].input_schema["properties"]["max_results"]["maximum"] == 20
    assert quoted.is_error  # no wallet: the answer is the quote, and nothing was searched
    assert quoted.structured_content["error"] == "payment_required"
    assert script.seen == []


# -- refusals before payment -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 501}, "query"),
        ({"query": "ferry", "max_results": 0}, "max_results"),
        ({"query": "ferry", "max_results": 21}, "max_results"),
        ({"query": "ferry", "max_results": "5"}, "max_results"),
        ({"max_results": 5}, "query"),
        ({"query": "ferry", "page": 2}, "page"),
    ],
)
async def test_bad_input_is_refused_before_payment(kernel_factory, stand_in, script, body, field) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(stand_in[0]))
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json=body)
    assert resp.status_code == 400, resp.text
    assert field in json.dumps(resp.json().get("details"))
    assert await count_quotes(kernel) == 0 and script.seen == []


async def test_500_character_query_is_accepted(kernel_factory, stand_in, script) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(stand_in[0]))
    async with http_client(kernel) as client:
        assert (await client.post(PATH, json={"query": "x" * 500, "max_results": 20})).status_code == 402


@pytest.mark.parametrize(
    ("env", "settings"),
    [
        ({}, ["TOLLWAY_SEARCH_PROVIDER"]),  # two installed, none chosen
        ({"TOLLWAY_SEARCH_PROVIDER": "brave"}, ["TOLLWAY_SEARCH_BRAVE_API_KEY"]),
        ({"TOLLWAY_SEARCH_PROVIDER": "searxng"}, ["TOLLWAY_SEARCH_SEARXNG_URL"]),
        ({"TOLLWAY_SEARCH_PROVIDER": "bing"}, ["TOLLWAY_SEARCH_PROVIDER"]),
    ],
)
async def test_unconfigured_provider_is_503_before_payment_naming_the_setting(kernel_factory, env, settings) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env=env)
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"query": "ferry"})
        health = (await client.get("/healthz")).json()
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["error"] == "provider_unavailable"
    assert body["details"] == {"reason": "not_configured", "kind": "search", "settings": settings}
    assert all(name in body["message"] for name in settings)
    assert await count_quotes(kernel) == 0
    (state,) = [p for p in health["providers"] if p["kind"] == "search"]
    assert state["configured"] is False and state["unset_settings"] == settings


# -- provider failures: never charged --------------------------------------------------------
@pytest.mark.parametrize(
    ("provider", "status", "body", "code"),
    [
        ("searxng", 401, b'{"error": "unauthorised"}', "provider_auth"),
        ("searxng", 403, b"forbidden", "provider_auth"),
        ("searxng", 429, b"slow down", "rate_limited"),
        ("searxng", 500, b"engine trouble", "provider_unavailable"),
        ("searxng", 502, b"", "provider_unavailable"),
        ("searxng", 200, b"<html>not json</html>", "provider_unavailable"),
        ("searxng", 200, b'{"query": "q", "results": "none"}', "provider_unavailable"),
        ("searxng", 200, b"[1, 2]", "provider_unavailable"),
        ("brave", 429, b'{"type": "ErrorResponse"}', "rate_limited"),
        ("brave", 403, b'{"type": "ErrorResponse"}', "provider_auth"),
        ("brave", 503, b"", "provider_unavailable"),
        ("brave", 200, b'{"type": "search", "web": {"results": [3]}}', "provider_unavailable"),
    ],
)
async def test_provider_failures_map_to_codes_and_refund_credits(
    kernel_factory, stand_in, script, caplog, provider, status, body, code
) -> None:
    caplog.set_level(logging.DEBUG)
    url, _ = stand_in
    env = searxng_env(url) if provider == "searxng" else brave_env(url)
    kernel = await kernel_factory(installed={"tollway_web"}, env=env)
    script.status, script.body = status, body
    if status == 429:
        script.headers = {"Retry-After": "7"}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(PATH, json={"query": "ferry"}, headers=auth)
        assert resp.status_code == 503, resp.text
        answer = resp.json()
        assert answer["error"] == code
        receipt = (await client.get(f"/v1/receipts/{answer['receipt_id']}", headers=auth)).json()
        assert await balance(client, auth) == "1.000000"
    assert receipt["execution_status"] == "failed"
    if status == 429:
        assert answer["details"]["retry_after"] == 7
    for text in (resp.text, json.dumps(receipt), caplog.text):
        assert BRAVE_KEY not in text


async def test_a_wrong_brave_key_is_provider_auth(kernel_factory, stand_in, script) -> None:
    kernel = await kernel_factory(
        installed={"tollway_web"}, env=brave_env(stand_in[0], TOLLWAY_SEARCH_BRAVE_API_KEY="wrong-key-0000")
    )
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(PATH, json={"query": "ferry"}, headers=auth)
    assert resp.status_code == 503 and resp.json()["error"] == "provider_auth"
    assert "wrong-key-0000" not in resp.text


async def test_past_the_time_limit_is_504_and_x402_is_not_settled(
    kernel_factory, stand_in, script, monkeypatch
) -> None:
    from tollway_web import search_tool

    monkeypatch.setattr(search_tool, "TIMEOUT_S", 0.3)
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(stand_in[0]))
    script.delay_s = 5.0  # far past the limit: an answer that waited for the upstream takes 5 s or more
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        quote = await client.post(PATH, json={"query": "ferry"})
        started = time.monotonic()
        resp = await client.post(
            PATH,
            json={"query": "ferry"},
            headers={"X-Payment-Proof": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])},
        )
        took = time.monotonic() - started
        assert resp.status_code == 504, resp.text
        receipt = (
            await client.get(f"/v1/receipts/{resp.json()['receipt_id']}", headers={"X-Agent-ID": payer.address})
        ).json()
        wallet = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    assert resp.json()["error"] == "provider_unavailable" and resp.json()["details"] == {"reason": "timeout"}
    assert took < 4.0  # cut at the 0.3 s limit, not at the upstream's answer (margin for a loaded machine)
    assert receipt["status"] == "not_charged"
    assert wallet["on_chain_balance"] == "1.000000"


async def test_an_unreachable_provider_is_provider_unavailable(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env("http://127.0.0.1:9"))
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(PATH, json={"query": "ferry"}, headers=auth)
        assert await balance(client, auth) == "1.000000"
    assert resp.status_code == 503 and resp.json()["error"] == "provider_unavailable"


async def test_searxng_health_check(kernel_factory, stand_in, script) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(stand_in[0]))
    assert await kernel.providers.check("search", kernel.context) is None
    assert [s["path"] for s in script.seen] == ["/healthz"]
    down = await kernel_factory(installed={"tollway_web"}, env=searxng_env("http://127.0.0.1:9"))
    assert await down.providers.check("search", down.context)


async def test_changes_shows_how_the_results_for_a_query_moved_to_their_agent_only(
    kernel_factory, stand_in, script
) -> None:
    from datetime import datetime

    today = datetime.now(UTC).date().isoformat()
    kernel = await kernel_factory(installed={"tollway_web"}, env=searxng_env(stand_in[0]))
    query = {"query": "harbour ferry timetable", "max_results": 2}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        _, stranger = await credits_session(client, "1")
        assert (await client.post(PATH, json=query, headers=auth)).status_code == 200
        script.body = json.dumps(
            {"query": "q", "results": [{"url": "https://quay.example.com/new", "title": "New", "content": ""}]}
        ).encode()
        assert (await client.post(PATH, json=query, headers=auth)).status_code == 200
        mine = await client.post(
            "/v1/tools/changes",
            json={
                "attribute": "web_search",
                "input": {"query": "harbour ferry timetable", "max_results": 2},
                "since": today,
            },
            headers=auth,
        )
        theirs = await client.post(
            "/v1/tools/changes", json={"attribute": "web_search", "input": query, "since": today}, headers=stranger
        )
        stranger_balance = (await client.get("/v1/balance", headers=stranger)).json()["credits_balance"]
    assert mine.status_code == 200, mine.text
    (change,) = mine.json()["data"]["changes"]
    assert change["before"] == {
        "result_count": 2,
        "urls": [
            "https://harbour.example.org/ferry/timetable/",
            "https://news.example.net/2026/tide-tables-move-morning-ferry",
        ],
    }
    assert change["after"] == {"result_count": 1, "urls": ["https://quay.example.com/new"]}
    # another agent sees none of it: to it the query has no history (no_data, not charged)
    assert theirs.status_code == 400 and theirs.json()["error"] == "no_data", theirs.text
    assert stranger_balance == "1.000000"
