"""The `research` job tool end to end over HTTP, on SQLite and PostgreSQL: paid from
credits, run by a worker, its search through the configured SearXNG provider (a real
HTTP server on 127.0.0.1 answering in SearXNG's JSON shape with the local article site's
pages), its pages read from that site, and, when a language model is configured, its
report written through a scripted Chat Completions server. Every citation resolves to a
source that was read; the job's message said its steps; with no search provider the
tool is refused before payment."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from research_support import SiteSearcher, completion, serve_searxng

from tollway.testing import count_quotes, credits_session, http_client, ledger_problems, worker_for


@pytest.fixture(scope="module")
def searxng(site):
    """The SearXNG stand-in over the site's articles: (its URL, its searcher, which notes the queries)."""
    searcher = SiteSearcher(site)
    server, url = serve_searxng(searcher)
    yield url, searcher
    server.shutdown()
    server.server_close()


def env_for(searxng_url: str, **more: str) -> dict[str, str]:
    return {
        "TOLLWAY_SEARCH_PROVIDER": "searxng",
        "TOLLWAY_SEARCH_SEARXNG_URL": searxng_url,
        "TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES": "true",
        **more,
    }


async def run_job(kernel, body: dict, receipt: list[dict] | None = None) -> tuple[dict, list[str], str]:
    """Pay for a research job from credits, run it on a worker, and poll it to its end;
    returns the finished job, the messages seen while it ran, and the credits left (and
    appends the job's receipt as served at its end to `receipt` when given)."""
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = await client.post("/v1/tools/research", json=body, headers=auth)
        assert accepted.status_code == 202, accepted.text
        assert (accepted.json()["status"], accepted.json()["tool"]) == ("pending", "research")
        url = f"/v1/requests/{accepted.json()['request_id']}"
        worker = worker_for(kernel)
        worker.start()
        seen: list[str] = []
        try:
            for _ in range(1200):
                job = (await client.get(url, headers=auth)).json()
                if job.get("message") and (not seen or seen[-1] != job["message"]):
                    seen.append(job["message"])
                if job["status"] in ("completed", "failed"):
                    break
                await asyncio.sleep(0.05)
        finally:
            await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        if receipt is not None:
            receipt.append((await client.get(f"/v1/receipts/{accepted.json()['receipt_id']}", headers=auth)).json())
    return job, seen, balance


def cited(report: str) -> set[int]:
    return {int(n) for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", report) for n in re.split(r"\s*,\s*", group)}


async def test_a_quick_extractive_report_cites_only_pages_read(kernel_factory, site, searxng) -> None:
    url, searcher = searxng
    searcher.delay_s = 0.2  # each search outlasts a few polls: the job's step message is seen while it runs
    kernel = await kernel_factory(installed={"tollway_web"}, env=env_for(url))
    job, seen, balance = await run_job(kernel, {"topic": "urban heat island mitigation"})
    assert job["status"] == "completed", job
    result = job["result"]
    numbers = {s["n"] for s in result["sources"]}
    assert 5 <= len(result["sources"]) <= 10
    assert cited(result["report"]) == numbers  # every source read is cited: at least the 5 promised
    assert all(s["url"].startswith(site.base) for s in result["sources"])
    assert result["meta"]["extractive"] is True and result["meta"]["providers"]["search"] == "searxng"
    queries = result["meta"]["queries"]
    asked = [q for q, _ in searcher.queries]
    assert len(queries) >= 2 and sorted(asked[-len(queries) :]) == sorted(queries)  # each sub-query went to SearXNG
    assert seen, "the job said which step it was on while it ran"
    assert balance == "0.850000"  # 0.15 charged


async def test_with_a_language_model_the_report_is_written_and_checked(
    kernel_factory, site, searxng, chat_server
) -> None:
    url, _ = searxng

    def script(body: dict) -> tuple[int, dict, float]:
        prompt = json.dumps(body["messages"])
        if "sub-questions" in prompt.lower() or "json array" in prompt.lower():
            return 200, completion(json.dumps(["urban heat island causes", "urban heat island health effects"])), 0.0
        return (
            200,
            completion(
                "Cities run hotter than their surroundings [1]. Trees cool streets [2][99]. Roofs store heat [3]; "
                "the elderly suffer most [4, 5]."
            ),
            0.0,
        )

    chat_server.script = script
    kernel = await kernel_factory(
        installed={"tollway_web"},
        env=env_for(url, TOLLWAY_LLM_BASE_URL=chat_server.base, TOLLWAY_LLM_MODEL="test-model"),
    )
    job, _, _ = await run_job(kernel, {"topic": "urban heat island", "depth": "quick"})
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["meta"]["extractive"] is False and result["meta"]["providers"]["llm"]
    assert "[99]" not in result["report"] and result["meta"]["citations_removed"] >= 1
    assert cited(result["report"]) == {1, 2, 3, 4, 5} and len(result["sources"]) >= 5
    written = [r for r in chat_server.requests if r.get("model") == "test-model"]
    assert written and any(site.base in json.dumps(r["messages"]) for r in written)  # the passages went into the prompt


async def test_without_a_search_provider_research_is_refused_before_payment(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env={})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        refused = await client.post("/v1/tools/research", json={"topic": "anything"}, headers=auth)
    assert refused.status_code == 503 and refused.json()["error"] == "provider_unavailable"
    assert "TOLLWAY_SEARCH_SEARXNG_URL" in refused.text or "TOLLWAY_SEARCH_PROVIDER" in refused.text
    assert await count_quotes(kernel) == 0


async def test_a_research_job_whose_searches_all_fail_is_refunded(kernel_factory) -> None:
    """The search provider answers 500 to every query: the job fails with
    provider_unavailable, its charge is refunded, and nothing is left running."""

    class Down(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Down)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        kernel = await kernel_factory(
            installed={"tollway_web"}, env=env_for(f"http://127.0.0.1:{server.server_address[1]}")
        )
        job, _, balance = await run_job(kernel, {"topic": "urban heat island"})
    finally:
        server.shutdown()
        server.server_close()
    assert (job["status"], job["error_code"]) == ("failed", "provider_unavailable")
    assert balance == "1.000000"  # charged at acceptance, refunded when it failed


async def test_one_readable_page_is_not_charged_and_the_search_time_limit_holds(kernel_factory, site) -> None:
    """The search finds one readable page, a broken one and one that answers after 8 s; with
    TOLLWAY_WEB_RESEARCH_QUICK_SEARCH_S=3 the run stops at its limit and, below the 5 sources
    quick promises, the job fails: the 0.15 charged is refunded in full and the receipt re-signed."""
    searcher = SiteSearcher(site, pages_per_topic=1, failing=("/fail/empty", "/fail/very-slow"))
    server, url = serve_searxng(searcher)
    try:
        kernel = await kernel_factory(
            installed={"tollway_web"}, env=env_for(url, TOLLWAY_WEB_RESEARCH_QUICK_SEARCH_S="3")
        )
        receipt: list[dict] = []
        started = time.monotonic()
        job, _, balance = await run_job(kernel, {"topic": "urban heat island"}, receipt)
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert (job["status"], job["error_code"], job["error_status"]) == ("failed", "source_unsupported", 422), job
    assert "Only 1 readable source" in job["error"] and "at least 5" in job["error"] and "within 3 s" in job["error"]
    assert "result" not in job
    assert balance == "1.000000"  # charged 0.15 at acceptance, all of it given back
    assert (receipt[0]["status"], receipt[0]["execution_status"]) == ("refunded", "failed")
    assert receipt[0]["revision"] >= 2 and receipt[0]["signature"]
    assert elapsed < 7.5  # the 3 s search limit, not the 8 s page nor the 660 s job limit
    assert await ledger_problems() == []
