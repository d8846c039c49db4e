"""`run_research`: plan, search and read until enough sources, rank and write, reporting progress at each step."""

from __future__ import annotations

import asyncio
import inspect

from tollway import ToolError

from . import compose, passages, plan
from .budget import PAGE_TIMEOUT_S, SEARCH_TIME_S, SOURCE_MINIMUM, Deadline
from .gather import Gathered, gather
from .model import Depth, Page, Providers, ResearchMeta, ResearchReport, Source
from .ports import ProgressFn, Reader, Searcher, Writer
from .rank import PassageIndex
from .reformulate import Reformulator


async def _tell(progress: ProgressFn, message: str) -> None:
    outcome = progress(message)
    if inspect.isawaitable(outcome):
        await outcome


def _no_sources(found: int) -> ToolError:
    if found == 0:
        return ToolError(
            "source_unsupported",
            "The search found no pages for this topic.",
            status=422,
            details={"reason": "no_results"},
        )
    return ToolError(
        "source_unsupported",
        f"None of the {found} pages found for this topic could be read.",
        status=422,
        details={"reason": "no_readable_pages", "pages_failed": found},
    )


def _too_few(depth: Depth, got: Gathered, deadline: Deadline) -> ToolError:
    """Fewer readable sources than the depth promises: no report, and the job is refunded in full."""
    promised = SOURCE_MINIMUM[depth]
    read = f"{len(got.pages)} readable source" + ("" if len(got.pages) == 1 else "s")
    return ToolError(
        "source_unsupported",
        f"Only {read} found for this topic in {got.searches} searches within {deadline.seconds:g} s; {depth} research "
        f"promises at least {promised}, so no report is made and the call is refunded in full.",
        status=422,
        details={
            "reason": "too_few_sources",
            "sources_read": len(got.pages),
            "sources_promised": promised,
            "pages_failed": got.failed,
            "searches": got.searches,
        },
    )


async def run_research(
    topic: str,
    depth: Depth,
    searcher: Searcher,
    reader: Reader,
    writer: Writer | None,
    progress: ProgressFn,
    *,
    page_timeout_s: float = PAGE_TIMEOUT_S,
    search_time_s: float | None = None,
) -> ResearchReport:
    """A Markdown report on `topic` citing at least the depth's promised number of readable
    sources (quick 5, deep 20), every `[n]` naming a source that was read.

    It searches further (further result pages, reformulated queries) until the depth's
    target is read or `search_time_s` (default per depth) has passed since it started. Pages
    that cannot be read are counted, not fatal; the call fails when every first search fails
    (that search error) or fewer readable sources than promised were found (source_unsupported).
    """
    deadline = Deadline(SEARCH_TIME_S[depth] if search_time_s is None else search_time_s)
    await _tell(progress, "planning")
    queries = await plan.plan_queries(topic, depth, writer, deadline)

    got = await gather(
        topic,
        depth,
        queries,
        searcher,
        reader,
        Reformulator(topic, depth, writer),
        deadline,
        page_timeout_s,
        lambda m: _tell(progress, m),
    )
    pages, failed = got.pages, got.failed
    if not pages:
        raise _no_sources(got.found)
    if len(pages) < SOURCE_MINIMUM[depth]:
        raise _too_few(depth, got, deadline)

    await _tell(progress, "ranking")
    sources = [Source(n=i, url=p.url, title=p.title, retrieved_at=p.retrieved_at) for i, p in enumerate(pages, 1)]
    split = await asyncio.to_thread(_split_all, pages)
    index = PassageIndex(split)
    chosen = compose.select(index, queries, depth)

    report: str | None = None
    removed = 0
    if writer is not None:
        await _tell(progress, "writing")
        report, removed = await compose.written(
            writer, topic, queries, compose.prompt_passages(chosen, index, depth), sources, SOURCE_MINIMUM[depth]
        )
    extractive = report is None
    if report is None:
        report = compose.extractive(topic, chosen, sources)
    meta = ResearchMeta(
        queries=got.queries,
        pages_read=len(pages),
        pages_failed=failed,
        providers=Providers(search=searcher.name, llm=writer.name if writer is not None else None),
        extractive=extractive,
        citations_removed=removed,
    )
    return ResearchReport(topic=topic, depth=depth, report=report, sources=sources, meta=meta)


def _split_all(pages: list[Page]) -> list[passages.Passage]:
    return [passage for n, page in enumerate(pages, 1) for passage in passages.split(page, n)]
