"""The research engine end to end: a searcher over a local site of articles, the real
web Reader reading them over HTTP, and (for written reports) a scripted OpenAI-compatible
Chat Completions server. Nothing is mocked below the HTTP layer."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest
from research_pages import FAILING, TOPICS
from research_support import ChatServer, Site, SiteSearcher, completion, serve_brave, serve_searxng

from tollway import ToolError
from tollway_web.research import ChatCompletionsWriter, ResearchReport, WebReader, run_research
from tollway_web.research.budget import MAX_SEARCHES, SOURCE_TARGET
from tollway_web.research.citations import CITATION, cited
from tollway_web.research.plan import deterministic_queries

NUMBER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def assert_citations_resolve(result: ResearchReport, site: Site) -> None:
    """Every `[n]` in the report names a source, and every source was actually served."""
    numbers = {s.n for s in result.sources}
    assert numbers == set(range(1, len(result.sources) + 1))
    found = cited(result.report)
    assert found, "the report cites nothing"
    assert set(found) <= numbers
    # Nothing else in the report looks like a citation (a page's own "[3]" was neutralised).
    for group in NUMBER.findall(result.report):
        assert {int(n) for n in group.split(",")} <= numbers
    served = {site.url(p) for p in site.hits}
    for source in result.sources:
        assert source.url.split("#")[0] in served
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", source.retrieved_at)


async def research(
    site: Site,
    topic: str,
    depth: str = "quick",
    *,
    searcher: SiteSearcher | None = None,
    writer: Any = None,
    allow_private: bool = True,
    messages: list[str] | None = None,
    **kwargs: Any,
) -> ResearchReport:
    async with httpx.AsyncClient(follow_redirects=True) as http:
        return await run_research(
            topic,
            depth,
            searcher or SiteSearcher(site),
            WebReader(http, allow_private=allow_private),
            writer,
            (messages if messages is not None else []).append,
            **kwargs,  # type: ignore[arg-type]
        )


# -- extractive reports ------------------------------------------------------------------
@pytest.mark.parametrize("topic", list(TOPICS))
async def test_quick_extractive_report_on_several_topics(site: Site, topic: str) -> None:
    messages: list[str] = []
    result = await research(site, topic, messages=messages)
    assert 5 <= len(result.sources) <= 10
    assert_citations_resolve(result, site)
    assert result.topic == topic and result.depth == "quick"
    meta = result.meta
    assert meta.extractive is True and meta.citations_removed == 0
    assert meta.pages_read == len(result.sources) and meta.pages_failed == 0
    assert (meta.providers.search, meta.providers.llm) == ("test_search", None)
    assert meta.queries[0] == topic and len(meta.queries) == 4
    assert any("criticism" in q for q in meta.queries)
    assert "extractive" in result.report.splitlines()[2]
    for query in meta.queries:
        assert f"## {query}" in result.report
    # Quoted passages are the pages' own words, and each ends with its source's number.
    bank = TOPICS[topic]["sentences"]
    quotes = [line for line in result.report.splitlines() if line.startswith("> ")]
    assert quotes and all(re.search(r" \[\d+\]$", q) for q in quotes)
    assert all(any(s.rstrip(".") in q for s in bank) for q in quotes)  # type: ignore[union-attr]
    assert messages[0] == "planning"
    assert [m for m in messages if m.startswith("searching")] == [f"searching {i}/4" for i in range(1, 5)]
    assert any(re.fullmatch(r"reading \d+/\d+", m) for m in messages)
    assert messages[-1] == "ranking"
    # Addresses differing only by a fragment are one page, read once.
    assert len({s.url for s in result.sources}) == len(result.sources)


async def test_deep_reads_twenty_or_more_sources_when_there_are_enough(site: Site) -> None:
    searcher = SiteSearcher(site)
    result = await research(site, "urban heat island", "deep", searcher=searcher)
    assert len(result.sources) >= 20
    assert_citations_resolve(result, site)
    assert set(cited(result.report)) == {s.n for s in result.sources}  # at least the 20 promised are cited
    assert len(result.meta.queries) == 8
    assert {m for _, m in searcher.queries} == {20}  # a web search gives at most 20 results
    # Quick reads fewer, and asks for fewer results per query.
    quick = SiteSearcher(site)
    assert len((await research(site, "urban heat island", searcher=quick)).sources) <= 10
    assert {m for _, m in quick.queries} == {8}


async def test_deep_with_fewer_pages_than_promised_fails_after_searching_further(site: Site) -> None:
    """Only 6 pages exist: deep (20 or more promised) searches further and fails with no report
    (the tool refunds it); quick (5 to 10) completes with all 6 cited."""
    searcher = SiteSearcher(site, pages_per_topic=6)
    with pytest.raises(ToolError) as info:
        await research(site, "honeybee colony collapse", "deep", searcher=searcher)
    assert (info.value.code, info.value.status) == ("source_unsupported", 422)
    details = info.value.details
    assert (details["reason"], details["sources_read"], details["sources_promised"]) == ("too_few_sources", 6, 20)
    assert "Only 6 readable sources" in info.value.message and "at least 20" in info.value.message
    assert details["searches"] == len(searcher.pages) > 8  # beyond the 8 planned queries, within the run's allowance
    assert len(searcher.pages) <= MAX_SEARCHES["deep"]
    quick = await research(site, "honeybee colony collapse", searcher=SiteSearcher(site, pages_per_topic=6))
    assert len(quick.sources) == 6 and set(cited(quick.report)) == {1, 2, 3, 4, 5, 6}
    assert_citations_resolve(quick, site)


async def test_one_readable_page_is_no_report(site: Site) -> None:
    """One readable page among failing ones: the run searches further (reformulated queries),
    then fails with too_few_sources instead of a one-source report."""
    searcher = SiteSearcher(site, pages_per_topic=1, failing=("/fail/server-error", "/fail/empty"))
    messages: list[str] = []
    with pytest.raises(ToolError) as info:
        await research(site, "urban heat island", searcher=searcher, messages=messages)
    details = info.value.details
    assert (details["reason"], details["sources_read"], details["sources_promised"]) == ("too_few_sources", 1, 5)
    assert "Only 1 readable source found" in info.value.message
    asked = [q for q, _ in searcher.pages]
    assert len(asked) == MAX_SEARCHES["quick"] and len(set(searcher.pages)) == len(asked)  # no search repeated
    assert asked[:4] == deterministic_queries("urban heat island", "quick")
    assert ("urban heat island", 2) in searcher.pages  # the only query finding something new is followed
    assert {"urban heat island causes", "urban heat island history"} <= set(asked)  # and the topic reformulated
    assert info.value.details["searches"] == len(asked)
    assert any(m.startswith("searching further") for m in messages)


async def test_search_goes_on_to_further_pages_and_reformulations(site: Site) -> None:
    """A search giving 2 results a page: the planned 4 queries find too few pages, so the run
    asks for the next result pages and new queries until it has read its 8 sources."""
    searcher = SiteSearcher(site, per_page=1)
    result = await research(site, "urban heat island", searcher=searcher)
    assert len(result.sources) == SOURCE_TARGET["quick"]
    assert_citations_resolve(result, site)
    assert len(set(cited(result.report))) == len(result.sources)  # every source read is cited
    assert any(page > 1 for _, page in searcher.pages)
    assert len(result.meta.queries) > 4 and result.meta.queries[:4] == deterministic_queries(
        "urban heat island", "quick"
    )
    assert {q for q, _ in searcher.pages} == set(result.meta.queries)


async def test_the_search_providers_give_further_result_pages(site: Site) -> None:
    """Page 2 goes to SearXNG as `pageno=2` and to Brave as `offset=1`; page 1 as before."""
    from tollway_web.research.tool import ProviderSearcher
    from tollway_web.search_providers import BraveClient, SearxngClient

    searcher = SiteSearcher(site)
    searxng, searxng_url = serve_searxng(searcher)
    seen: list[dict[str, list[str]]] = []
    brave, brave_url = serve_brave(seen)
    try:
        async with httpx.AsyncClient() as http:
            client = ProviderSearcher(SearxngClient(searxng_url, http), "searxng")
            first, second = (
                await client.search("urban heat island", 8),
                await client.search("urban heat island", 8, page=2),
            )
            by_brave = ProviderSearcher(BraveClient(brave_url, "key", http), "brave")
            assert await by_brave.search("harbour ferry", 5) and await by_brave.search("harbour ferry", 5, page=3)
    finally:
        for server in (searxng, brave):
            server.shutdown()
            server.server_close()
    assert searcher.pages == [("urban heat island", 1), ("urban heat island", 2)]
    assert first and second and not {h.url for h in first} & {h.url for h in second}
    assert [q.get("offset") for q in seen] == [None, ["2"]] and [q["count"] for q in seen] == [["5"], ["5"]]


async def test_the_search_time_limit_is_respected(site: Site) -> None:
    """One readable page, a broken one and one answering after 3 s: with a 2 s limit the run
    stops reading at the limit, searches no further and fails, its allowance of searches unspent."""
    searcher = SiteSearcher(site, failing=("/fail/slow", "/fail/empty"), pages_per_topic=1, delay_s=0.1)
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        await research(site, "urban heat island", searcher=searcher, search_time_s=2.0)
    elapsed = time.monotonic() - started
    assert 1.9 <= elapsed < 2.9  # the limit, not the 3 s page nor the 25 s page timeout
    assert info.value.details["reason"] == "too_few_sources" and info.value.details["sources_read"] == 1
    assert "within 2 s" in info.value.message
    assert len(searcher.pages) == 4 < MAX_SEARCHES["quick"]


async def test_pages_that_fail_are_counted_not_fatal(site: Site) -> None:
    searcher = SiteSearcher(site, failing=FAILING)
    result = await research(site, "honeybee colony collapse", searcher=searcher, page_timeout_s=1.0)
    assert result.meta.pages_failed == len(FAILING)
    assert 5 <= len(result.sources) <= 10 and result.meta.pages_read == len(result.sources)
    assert not any("/fail/" in s.url for s in result.sources)
    assert_citations_resolve(result, site)


async def test_a_page_footnote_is_not_taken_for_a_citation(site: Site) -> None:
    result = await research(site, "urban heat island")
    assert "variation in night heat (3)" in result.report
    assert "night heat \\[3" not in result.report and "night heat [3" not in result.report


async def test_private_addresses_are_refused_unless_allowed(site: Site) -> None:
    with pytest.raises(ToolError) as info:
        await research(site, "urban heat island", allow_private=False)
    assert info.value.code == "source_unsupported"
    assert info.value.details["reason"] == "no_readable_pages"


async def test_private_address_refusal_happens_before_connecting(site: Site) -> None:
    before = len(site.hits)
    with pytest.raises(ToolError):
        await research(site, "lithium-ion battery recycling", allow_private=False)
    assert len(site.hits) == before


async def test_no_results_and_failing_search(site: Site) -> None:
    with pytest.raises(ToolError) as info:
        await research(site, "medieval falconry")
    assert (info.value.code, info.value.details["reason"]) == ("source_unsupported", "no_results")
    down = ToolError("provider_unavailable", "search is down", status=503)
    with pytest.raises(ToolError) as info:
        await research(site, "urban heat island", searcher=SiteSearcher(site, fail_with=down))
    assert info.value is down


# -- written reports -------------------------------------------------------------------------
def writer_for(chat: ChatServer, api_key: str | None = "sk-test") -> ChatCompletionsWriter:
    return ChatCompletionsWriter(httpx.AsyncClient(), chat.base, "test-model", api_key, timeout=httpx.Timeout(2.0))


def is_planning(body: dict[str, Any]) -> bool:
    return "JSON array" in body["messages"][0]["content"]


async def test_written_report_keeps_valid_citations_and_removes_invalid_ones(
    site: Site, chat_server: ChatServer
) -> None:
    plan = ["urban heat island health effects", "urban heat island trees shade", "urban heat island cool roofs"]
    answer = (
        "## Why cities are warmer\n\nDark surfaces store heat and release it at night [1]. "
        "Trees cool streets [2, 99]. Roofs painted white help [42].\n\n"
        "## Health\n\nOlder residents are most at risk [3][77]. A made-up study agrees [0]. "
        "Shade at bus stops helps [4]; parks cool nearby streets [5]."
    )
    chat_server.script = lambda body: (200, completion(json.dumps(plan) if is_planning(body) else answer), 0.0)
    result = await research(site, "urban heat island", writer=writer_for(chat_server))

    assert result.meta.extractive is False
    assert result.meta.providers.llm == "openai_chat"
    assert result.meta.queries == ["urban heat island", *plan]
    assert result.meta.citations_removed == 4  # 99, 42, 77 and 0
    assert "[1]" in result.report and "[2]" in result.report and "[3]" in result.report
    assert not {99, 42, 77, 0} & set(cited(result.report))
    assert "Trees cool streets [2]." in result.report  # a group keeps its valid numbers
    assert "Older residents are most at risk [3]." in result.report
    assert "Roofs painted white help." in result.report  # the removed citation left no stray space
    assert "## Sources" in result.report
    assert_citations_resolve(result, site)

    # The request: model, messages, bearer key, at /v1/chat/completions.
    assert chat_server.paths == ["/v1/chat/completions", "/v1/chat/completions"]
    assert all(h["authorization"] == "Bearer sk-test" for h in chat_server.headers)
    writing = chat_server.requests[1]
    assert writing["model"] == "test-model"
    prompt = writing["messages"][1]["content"]
    # The prompt carries numbered passages with their source's URL, from every source read.
    for source in result.sources:
        assert f"[{source.n}] ({source.url})" in prompt
    assert "Dark roofs and asphalt absorb sunlight" in prompt or "Street trees cool the air" in prompt
    for question in result.meta.queries:
        assert f"- {question}" in prompt
    assert "square brackets" in writing["messages"][0]["content"]


async def test_written_report_with_no_valid_citation_falls_back_to_extractive(
    site: Site, chat_server: ChatServer
) -> None:
    chat_server.script = lambda body: (
        200,
        completion('["bee mites", "bee pesticides"]' if is_planning(body) else "Bees are in trouble [31], [45; 46]."),
        0.0,
    )
    result = await research(site, "honeybee colony collapse", writer=writer_for(chat_server))
    assert result.meta.extractive is True
    assert result.meta.citations_removed == 3
    assert result.meta.providers.llm == "openai_chat"
    assert "extractive" in result.report and "[31]" not in result.report
    assert_citations_resolve(result, site)


async def test_written_report_citing_fewer_sources_than_promised_falls_back_to_extractive(
    site: Site, chat_server: ChatServer
) -> None:
    """A written report citing 4 different sources where quick promises 5 is not used: the
    extractive report, citing every source read, is served instead; the prompt asked for 5."""
    chat_server.script = lambda body: (
        200,
        completion('["bee mites"]' if is_planning(body) else "Mites spread viruses [1, 2]. Losses continue [3][4][1]."),
        0.0,
    )
    result = await research(site, "honeybee colony collapse", writer=writer_for(chat_server))
    assert result.meta.extractive is True and result.meta.citations_removed == 0
    assert set(cited(result.report)) == {s.n for s in result.sources} and len(result.sources) >= 5
    assert "Cite at least 5 different sources." in chat_server.requests[-1]["messages"][0]["content"]


WRITTEN_BATTERIES = (
    "Cells are shredded into black mass [2]. Cobalt is recovered [1, 3]; smelting loses lithium [4], acid keeps it [5]."
)


async def test_malformed_plan_falls_back_to_deterministic_queries(site: Site, chat_server: ChatServer) -> None:
    chat_server.script = lambda body: (
        200,
        completion("Here are some ideas: batteries!" if is_planning(body) else WRITTEN_BATTERIES),
        0.0,
    )
    result = await research(site, "lithium-ion battery recycling", writer=writer_for(chat_server))
    assert result.meta.queries == [
        "lithium-ion battery recycling",
        "lithium-ion battery recycling overview",
        "lithium-ion battery recycling evidence",
        "lithium-ion battery recycling criticism",
    ]
    assert result.meta.extractive is False
    assert result.report.startswith("Cells are shredded into black mass [2].")


async def test_model_failure_gives_an_extractive_report(site: Site, chat_server: ChatServer) -> None:
    chat_server.script = lambda body: (500, {"error": {"message": "overloaded"}}, 0.0)
    messages: list[str] = []
    result = await research(site, "urban heat island", writer=writer_for(chat_server), messages=messages)
    assert result.meta.extractive is True and result.meta.citations_removed == 0
    assert result.meta.queries[1] == "urban heat island overview"
    assert len(chat_server.requests) == 2  # planning and writing were both tried
    assert messages[-1] == "writing"
    assert_citations_resolve(result, site)


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, {"error": {"message": "Incorrect API key provided"}}, "provider_auth"),
        (403, {"error": {"message": "forbidden"}}, "provider_auth"),
        (429, {"error": {"message": "Rate limit reached"}}, "rate_limited"),
        (500, {"error": {"message": "internal"}}, "provider_unavailable"),
        (502, b"<html>Bad gateway</html>", "provider_unavailable"),
        (200, b"not json", "provider_unavailable"),
        (200, {"choices": []}, "provider_unavailable"),
        (200, completion(None), "provider_unavailable"),
        (200, completion("", "content_filter"), "content_blocked"),
        (400, {"error": {"message": "filtered", "type": None, "code": "content_filter"}}, "content_blocked"),
        (400, {"error": {"message": "bad request"}}, "provider_unavailable"),
    ],
)
async def test_model_errors_are_mapped(chat_server: ChatServer, status: int, body: Any, code: str) -> None:
    chat_server.script = lambda _: (status, body, 0.0)
    with pytest.raises(ToolError) as info:
        await writer_for(chat_server).complete([{"role": "user", "content": "hi"}])
    assert info.value.code == code
    assert "sk-test" not in info.value.message and "sk-test" not in str(info.value.details)


async def test_model_timeout_and_refused_connection_are_unavailable(chat_server: ChatServer) -> None:
    chat_server.script = lambda _: (200, completion("late"), 3.0)
    writer = ChatCompletionsWriter(httpx.AsyncClient(), chat_server.base, "m", None, timeout=httpx.Timeout(0.5))
    with pytest.raises(ToolError) as info:
        await writer.complete([{"role": "user", "content": "hi"}])
    assert (info.value.code, info.value.details["reason"]) == ("provider_unavailable", "timeout")
    assert "authorization" not in chat_server.headers[0]
    closed = ChatCompletionsWriter(httpx.AsyncClient(), "http://127.0.0.1:9/v1", "m")
    with pytest.raises(ToolError) as info:
        await closed.complete([{"role": "user", "content": "hi"}])
    assert info.value.code == "provider_unavailable"


def test_citation_pattern_ignores_links() -> None:
    assert cited("see [the page](https://x.example/1) and [2], [3, 4]") == [2, 3, 4]
    assert CITATION.search("[text](https://x)") is None


# -- the tool declaration (not registered yet) ------------------------------------------------
async def test_research_tool_declaration_and_run(site: Site) -> None:
    import msgspec

    from tollway import ToolContext
    from tollway_web.research.tool import ResearchInput, research_tool
    from tollway_web.settings import ALLOW_PRIVATE_ADDRESSES

    tool = research_tool(lambda ctx: SiteSearcher(site), lambda ctx: None)
    assert (tool.name, tool.path, tool.mode, tool.accepted_status) == (
        "research",
        "/v1/tools/research",
        "job",
        "pending",
    )
    assert (tool.price, tool.rate_limit, tool.payment_header, tool.refund_failed_jobs) == (
        150_000,
        "expensive",
        "X-Payment-Proof",
        True,
    )
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"topic": "bees", "depth": "medium"}, ResearchInput)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"topic": ""}, ResearchInput)
    value = msgspec.convert({"topic": "honeybee colony collapse"}, ResearchInput)
    assert value.depth == "quick"
    async with httpx.AsyncClient(follow_redirects=True) as http:
        ctx = ToolContext(
            request_id="req_research", agent_id=None, http=http, settings={ALLOW_PRIVATE_ADDRESSES.name: "true"}
        )
        result = await tool.run(value, ctx)
        assert 5 <= len(result.sources) <= 10
        assert_citations_resolve(result, site)
        # Without the setting, the same run refuses the local pages as web_read does.
        with pytest.raises(ToolError) as info:
            await tool.run(value, ToolContext(request_id="r2", agent_id=None, http=http, settings={}))
        assert info.value.details["reason"] == "no_readable_pages"
    encoded = msgspec.json.decode(msgspec.json.encode(result))
    assert set(encoded) == {"topic", "depth", "report", "sources", "meta"}
    assert set(encoded["meta"]) == {
        "queries",
        "pages_read",
        "pages_failed",
        "providers",
        "extractive",
        "citations_removed",
    }
    assert set(encoded["sources"][0]) == {"n", "url", "title", "retrieved_at"}
