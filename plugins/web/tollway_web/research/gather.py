"""Searching every sub-question and reading the pages found, bounded and failure-tolerant."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import httpx

from tollway import ToolError

from .model import Hit, Page
from .ports import Reader, Searcher

Tell = Callable[[str], Awaitable[None]]


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


async def search_all(searcher: Searcher, queries: Sequence[str], max_results: int, tell: Tell) -> list[Hit]:
    """Every query's hits, interleaved (each query's first, then each one's second, ...)
    so every sub-question gets sources early, with repeated pages dropped.

    A failing search is skipped; if every search fails, the first failure is raised.
    """
    found: list[list[Hit]] = []
    errors: list[ToolError] = []
    for i, query in enumerate(queries, 1):
        await tell(f"searching {i}/{len(queries)}")
        try:
            found.append(list(await searcher.search(query, max_results)))
        except ToolError as exc:
            errors.append(exc)
    if errors and not found:
        raise errors[0]
    hits: list[Hit] = []
    seen: set[str] = set()
    for rank in range(max((len(f) for f in found), default=0)):
        for results in found:
            if rank < len(results):
                key = normalized(results[rank].url)
                if key not in seen:
                    seen.add(key)
                    hits.append(results[rank])
    return hits


async def read_until(
    reader: Reader, urls: Sequence[str], target: int, concurrency: int, timeout_s: float, tell: Tell
) -> tuple[list[Page], int]:
    """Read `urls` in order, at most `concurrency` at once, until `target` pages are read
    or none are left. Returns the pages in `urls` order and how many reads failed.

    A read that raises anything or exceeds `timeout_s` is a failure, counted and replaced by the
    next address. Two addresses that end at the same page (redirects) count once.
    """
    gate = asyncio.Semaphore(concurrency)
    read: dict[int, Page] = {}
    final_urls: set[str] = set()
    failed = 0
    position = 0
    attempted = 0

    async def one(i: int) -> Page | None:
        async with gate:
            try:
                async with asyncio.timeout(timeout_s):
                    return await reader.read(urls[i])
            except Exception:  # noqa: BLE001 - any page's failure is counted, never fatal
                return None

    while len(read) < target and position < len(urls):
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
