"""`run_research`: plan, search, read, rank and write, reporting progress at each step."""
from __future__ import annotations

import asyncio
import inspect

from tollway import ToolError

from . import compose, passages, plan
from .gather import read_until, search_all
from .model import Depth, Page, Providers, ResearchMeta, ResearchReport, Source
from .ports import ProgressFn, Reader, Searcher, Writer
from .rank import PassageIndex

# Sources wanted per depth: quick reads 8 (between 5 and 10), deep 24 (20 or more).
SOURCE_TARGET = {"quick": 8, "deep": 24}
RESULTS_PER_QUERY = {"quick": 8, "deep": 20}  # a web search gives at most 20
READ_CONCURRENCY = {"quick": 4, "deep": 6}
PAGE_TIMEOUT_S = 25.0


async def _tell(progress: ProgressFn, message: str) -> None:
    outcome = progress(message)
    if inspect.isawaitable(outcome):
        await outcome


def _no_sources(found: int) -> ToolError:
    if found == 0:
        return ToolError("source_unsupported", "The search found no pages for this topic.", status=422, details={"reason": "no_results"})
    return ToolError(
        "source_unsupported", f"None of the {found} pages found for this topic could be read.", status=422,
        details={"reason": "no_readable_pages", "pages_failed": found},
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
) -> ResearchReport:
    """A Markdown report on `topic` whose every `[n]` names a source that was read.

    Pages that cannot be read are counted, not fatal; the call fails only when every
    search fails (that search error) or no page at all could be read (source_unsupported).
    """
    await _tell(progress, "planning")
    queries = await plan.plan_queries(topic, depth, writer)

    hits = await search_all(searcher, queries, RESULTS_PER_QUERY[depth], lambda m: _tell(progress, m))
    candidates = [hit.url for hit in hits]
    pages, failed = await read_until(
        reader, candidates, SOURCE_TARGET[depth], READ_CONCURRENCY[depth], page_timeout_s,
        lambda m: _tell(progress, m),
    )
    if not pages:
        raise _no_sources(len(candidates))

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
            writer, topic, queries, compose.prompt_passages(chosen, index, depth), sources
        )
    extractive = report is None
    if report is None:
        report = compose.extractive(topic, chosen, sources)
    meta = ResearchMeta(
        queries=queries,
        pages_read=len(pages),
        pages_failed=failed,
        providers=Providers(search=searcher.name, llm=writer.name if writer is not None else None),
        extractive=extractive,
        citations_removed=removed,
    )
    return ResearchReport(topic=topic, depth=depth, report=report, sources=sources, meta=meta)


def _split_all(pages: list[Page]) -> list[passages.Passage]:
    return [passage for n, page in enumerate(pages, 1) for passage in passages.split(page, n)]
