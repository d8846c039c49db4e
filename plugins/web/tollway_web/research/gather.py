"""Searching and reading until the depth's target of readable pages is read, the run's
searches are spent or its deadline passes: the planned queries first, then further result
pages of the queries still finding new pages and new reformulations of the topic."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence

import httpx

from tollway import ToolError

from . import passages
from .budget import MAX_RESULT_PAGE, MAX_SEARCHES, READ_CONCURRENCY, RESULTS_PER_QUERY, SOURCE_TARGET, Deadline
from .model import Depth, Hit, Page
from .ports import Reader, Searcher
from .reformulate import Reformulator

Tell = Callable[[str], Awaitable[None]]
Request = tuple[str, int]  # a query and which page of its results


@dataclasses.dataclass
class Gathered:
    pages: list[Page] = dataclasses.field(default_factory=list)  # readable pages, in reading order
    failed: int = 0  # reads that failed, timed out or gave no passage
    queries: list[str] = dataclasses.field(default_factory=list)  # every query searched, in order
    searches: int = 0  # search requests made (a further page counts as one)
    found: int = 0  # distinct addresses the searches gave


def normalized(url: str) -> str:
    """The form two addresses of one page share: no fragment, lower-case scheme and host,
    no trailing slash on the path."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, UnicodeError):
        return url
    path = parsed.path.rstrip("/") or "/"
    # httpx already writes scheme and host in lower case.
    return str(parsed.copy_with(fragment=None, path=path)) if parsed.host else url


async def _search(searcher: Searcher, query: str, page: int, max_results: int, deadline: Deadline) -> list[Hit]:
    if deadline.passed:
        raise ToolError("provider_unavailable", "The research time limit passed before this search.", status=503)
    try:
        async with asyncio.timeout(deadline.left()):
            if page == 1:
                return list(await searcher.search(query, max_results))
            return list(await searcher.search(query, max_results, page=page))
    except TimeoutError as exc:
        raise ToolError(
            "provider_unavailable", "The search did not answer within the research time limit.", status=503
        ) from exc


async def search_round(
    searcher: Searcher, requests: Sequence[Request], max_results: int, deadline: Deadline, tell: Tell, label: str
) -> tuple[list[tuple[Request, list[Hit]]], list[ToolError]]:
    """Each request's hits (failures skipped) and the failures."""
    found: list[tuple[Request, list[Hit]]] = []
    errors: list[ToolError] = []
    for i, (query, page) in enumerate(requests, 1):
        await tell(f"{label} {i}/{len(requests)}")
        try:
            found.append(((query, page), await _search(searcher, query, page, max_results, deadline)))
        except ToolError as exc:
            errors.append(exc)
    return found, errors


def interleaved(found: Sequence[list[Hit]], seen: set[str]) -> list[str]:
    """New addresses, each list's first, then each one's second, ... so every query gets
    sources early; an address in `seen` (or repeated) is dropped and the new ones added to it."""
    urls: list[str] = []
    for rank in range(max((len(f) for f in found), default=0)):
        for hits in found:
            if rank < len(hits):
                key = normalized(hits[rank].url)
                if key not in seen:
                    seen.add(key)
                    urls.append(hits[rank].url)
    return urls


async def read_until(
    reader: Reader,
    urls: Sequence[str],
    target: int,
    concurrency: int,
    timeout_s: float,
    tell: Tell,
    deadline: Deadline,
    read_before: set[str] | None = None,
) -> tuple[list[Page], int]:
    """Read `urls` in order, at most `concurrency` at once, until `target` pages are read, none
    are left or the deadline passes. Returns the pages in `urls` order and how many reads failed.

    A read that raises anything, exceeds `timeout_s` (or the deadline) or has no passage of text
    is a failure, counted and replaced by the next address. Two addresses that end at the same
    page (redirects) count once, also across calls sharing `read_before`.
    """
    gate = asyncio.Semaphore(concurrency)
    read: dict[int, Page] = {}
    final_urls = read_before if read_before is not None else set()
    failed = 0
    position = 0
    attempted = 0

    async def one(i: int) -> Page | None:
        async with gate:
            try:
                async with asyncio.timeout(min(timeout_s, deadline.left())):
                    page = await reader.read(urls[i])
                    return page if await asyncio.to_thread(passages.split, page, 0) else None
            except Exception:  # noqa: BLE001 - any page's failure is counted, never fatal
                return None

    while len(read) < target and position < len(urls) and not deadline.passed:
        batch = list(range(position, min(len(urls), position + target - len(read))))
        position = batch[-1] + 1
        attempted += len(batch)
        await tell(f"reading {attempted}/{len(urls)}")
        for i, page in zip(batch, await asyncio.gather(*(one(i) for i in batch))):
            if page is None:
                failed += 1
            elif normalized(page.url) not in final_urls:
                final_urls.add(normalized(page.url))
                read[i] = page
    return [read[i] for i in sorted(read)], failed


async def gather(
    topic: str,
    depth: Depth,
    planned: Sequence[str],
    searcher: Searcher,
    reader: Reader,
    reformulator: Reformulator,
    deadline: Deadline,
    page_timeout_s: float,
    tell: Tell,
) -> Gathered:
    """Rounds of searching and reading until `SOURCE_TARGET[depth]` pages are read.

    If every search of the first round fails, the first failure is raised; a later round's
    failures only end the gathering.
    """
    out = Gathered()
    target, per_query = SOURCE_TARGET[depth], RESULTS_PER_QUERY[depth]
    seen: set[str] = set()  # addresses already given by a search
    read_before: set[str] = set()  # final addresses already read
    next_page: dict[str, int] = {}  # queries whose last page gave new addresses -> the page after it
    requests: list[Request] = [(q, 1) for q in planned]
    first = True
    while requests and not deadline.passed:
        requests = requests[: MAX_SEARCHES[depth] - out.searches]
        found, errors = await search_round(
            searcher, requests, per_query, deadline, tell, "searching" if first else "searching further"
        )
        out.searches += len(requests)
        out.queries += [q for q, _ in requests if q not in out.queries]
        if errors and not found and first:
            raise errors[0]
        for query, _ in requests:
            next_page.pop(query, None)
        before = set(seen)
        for (query, page), hits in found:  # in order: a page repeating an earlier one's addresses gave nothing new
            if interleaved([hits], before) and page < MAX_RESULT_PAGE:
                next_page[query] = page + 1
        urls = interleaved([hits for _, hits in found], seen)
        out.found += len(urls)
        pages, failed = await read_until(
            reader, urls, target - len(out.pages), READ_CONCURRENCY[depth], page_timeout_s, tell, deadline, read_before
        )
        out.pages += pages
        out.failed += failed
        if len(out.pages) >= target or out.searches >= MAX_SEARCHES[depth] or deadline.passed:
            break
        requests = [*next_page.items(), *((q, 1) for q in await reformulator.next(out.queries, deadline))]
        first = False
    return out
