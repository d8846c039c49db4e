"""The `web_search` tool: a query answered by the configured `search` provider, hits
deduplicated by normalised URL and cut to `max_results`; inline, 15-second limit.

The URL a hit is compared by (`normalise_url`): scheme and host in lower case, the
default port dropped, the fragment dropped, tracking parameters (`utm_*`, click ids)
dropped, a trailing slash of the path dropped. The first hit of each normalised URL
is kept, as the provider wrote it.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec
from msgspec import Meta

from tollway import Example, Fact, FieldError, Tool, ToolContext, ToolError, search_key

from . import settings
from .search_providers import BRAVE_MAX_COUNT, KIND, SearchClient

TIMEOUT_S = 15.0  # the whole call, provider included; past it: 504 provider_unavailable, not charged
MAX_QUERY_CHARS = 500
MAX_RESULTS = 20
_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING = frozenset(
    {
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "igshid",
        "_ga",
        "_hsenc",
        "_hsmi",
    }
)


class WebSearchInput(msgspec.Struct, forbid_unknown_fields=True):
    query: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            description="What to search the web for, 1 to 500 characters.",
            examples=["harbour ferry timetable"],
        ),
    ]
    max_results: Annotated[
        int, Meta(ge=1, le=MAX_RESULTS, description="How many results to return at most, 1 to 20.")
    ] = 5


class WebSearchHit(msgspec.Struct):
    url: str  # as the provider wrote it
    title: str  # empty when the provider gives none
    description: str  # the provider's snippet; empty when none


class WebSearchResult(msgspec.Struct):
    """The Web search result (docs/web.md)."""

    query: str  # the query as asked
    results: list[WebSearchHit]
    result_count: int  # len(results)


def normalise_url(url: str) -> str:
    """The form two hits are compared in (see the module docstring)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if parts.username or parts.password:
        netloc = f"{parts.username or ''}{':' + parts.password if parts.password else ''}@{netloc}"
    path = parts.path.rstrip("/")
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith("utm_") and k.lower() not in _TRACKING
    ]
    return urlunsplit((scheme, netloc, path, urlencode(query), ""))


def check(value: WebSearchInput) -> None:
    if not value.query.strip():
        raise FieldError("query", "Expected a query with at least one non-space character")


def _timed_out() -> ToolError:
    return ToolError(
        "provider_unavailable", f"The search provider did not answer within {TIMEOUT_S:g} seconds. Nothing was charged.",
        status=504, details={"reason": "timeout"},
    )  # fmt: skip


async def run(value: WebSearchInput, ctx: ToolContext) -> WebSearchResult:
    client = cast(SearchClient, ctx.provider(KIND))  # the kind's interface
    try:
        async with asyncio.timeout(TIMEOUT_S):
            hits = await client.search(value.query, min(BRAVE_MAX_COUNT, 2 * value.max_results))
    except TimeoutError as exc:
        raise _timed_out() from exc
    except ToolError as exc:
        if isinstance(exc.details, dict) and exc.details.get("reason") == "timeout":
            raise _timed_out() from exc
        raise
    seen: set[str] = set()
    results: list[WebSearchHit] = []
    for hit in hits:
        key = normalise_url(hit.url)
        if key not in seen:
            seen.add(key)
            results.append(WebSearchHit(url=hit.url, title=hit.title, description=hit.description))
        if len(results) == value.max_results:
            break
    return WebSearchResult(query=value.query, results=results, result_count=len(results))


def facts(value: WebSearchInput, answer: WebSearchResult) -> list[Fact]:
    """The result list of a query, keyed by the hash of the input: Changes shows how it moved.
    Another provider's results are the caller's own, so the fact is private to its agent."""
    return [
        Fact(
            attribute="web_search",
            key=search_key(value),
            value={"result_count": answer.result_count, "urls": [r.url for r in answer.results]},
            source="web_search",
            public=False,
            benchmarked=False,
        )
    ]


WEB_SEARCH = Tool(
    name="web_search",
    path="/v1/tools/search",
    title="Web search",
    summary="Searches the web and returns up to 20 results, each a URL, title and description.",
    description=(
        "Search the web: returns up to `max_results` results (default 5, at most 20), each with its URL, title "
        "and description, with the same page listed once (URLs compared without fragment, tracking parameters, "
        "default port or trailing slash). Answered by the search provider the service is configured with; a "
        "provider that does not answer within 15 seconds fails with provider_unavailable, and a failed search "
        "is not charged."
    ),
    category="data",
    subcategory="web_search",
    input_type=WebSearchInput,
    output_type=WebSearchResult,
    run=run,
    price="0.01",
    family=settings.FAMILY,
    payment_header="X-Payment-Proof",
    rate_limit="paid",
    examples=(
        Example(title="Five results for a query", input={"query": "harbour ferry timetable"}),
        Example(title="Up to ten results", input={"query": "tide tables north quay", "max_results": 10}),
    ),
    check=check,
    facts=facts,
    searches=True,
    provider_kind=KIND,
)
