"""The `search` providers: SearXNG's JSON API and the Brave Search API, each a client
that answers a query with hits `(url, title, description)`, and its `tollway.Provider`.

Every failure is a `ToolError` (never charged): 401/403 `provider_auth`, 429
`rate_limited`, any other refusal, an unreachable host or an answer not in the
documented shape `provider_unavailable`. No failure names the API key.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Mapping
from typing import Any, Protocol

import httpx

from tollway import PluginContext, Provider, Setting, Upstream, to_micro

KIND = "search"


@dataclasses.dataclass(frozen=True)
class Hit:
    url: str
    title: str
    description: str


class SearchClient(Protocol):
    """What every `search` provider's client offers (`SearxngClient` and `BraveClient` do)."""

    async def search(self, query: str, count: int, page: int = 1) -> list[Hit]: ...


_TAG = re.compile(r"<[^>]{0,200}>")


def _text(value: Any) -> str:
    """Plain text of a title or snippet: markup (Brave marks the query's words with
    <strong>) and entities undone, white space collapsed."""
    return " ".join(html.unescape(_TAG.sub("", value)).split()) if isinstance(value, str) else ""


def _hits(upstream: Upstream, items: Any, snippet: str) -> list[Hit]:
    """Hits from a list of result objects with `url`, `title` and the snippet field."""
    if not isinstance(items, list):
        raise upstream.unavailable(f"{upstream.label} answered without a list of results.", reason="malformed")
    hits = []
    for item in items:
        if not isinstance(item, dict):
            raise upstream.unavailable(
                f"{upstream.label} answered with a result that is not an object.", reason="malformed"
            )
        url = item.get("url")
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            hits.append(Hit(url=url, title=_text(item.get("title")), description=_text(item.get(snippet))))
    return hits


# -- SearXNG -----------------------------------------------------------------------------
SEARXNG_URL = Setting(
    KIND, "searxng_url", None,
    "Base URL of a SearXNG instance whose JSON output is enabled (`search.formats` includes json), "
    "e.g. http://127.0.0.1:8888. Queries go to <URL>/search?q=...&format=json.",
)  # fmt: skip
SEARXNG_COST = Setting(
    KIND, "searxng_cost_usdc", "0", "What one SearXNG query costs us in USDC (0 for a self-hosted instance)."
)
_SEARXNG = Upstream(
    family=KIND, name="searxng", label="SearXNG", default_base_url="", url_setting="searxng_url", description=""
)


class SearxngClient:
    """`GET <base>/search?q=<query>&format=json[&pageno=<page>]` -> `{"query", "results": [{url, title, content, ...}], ...}`."""

    def __init__(self, base_url: str, http: httpx.AsyncClient) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http

    async def search(self, query: str, count: int, page: int = 1) -> list[Hit]:
        params = {"q": query, "format": "json", **({"pageno": str(page)} if page > 1 else {})}
        body = await _SEARXNG.get_json(self.http, "/search", base_url=self.base_url, params=params)
        if not isinstance(body, dict):
            raise _SEARXNG.unavailable(
                "SearXNG answered with something other than a search result.", reason="malformed"
            )
        return _hits(_SEARXNG, body.get("results"), "content")[:count]


def _searxng(settings: Mapping[str, str], http: httpx.AsyncClient) -> SearxngClient:
    return SearxngClient(settings["searxng_url"], http)


async def _searxng_health(context: PluginContext) -> str | None:
    """SearXNG answers `GET /healthz` with 200 when it is up."""
    base = (context.settings(KIND).get("searxng_url") or "").rstrip("/")
    try:
        reply = await _SEARXNG.send(context.http, "/healthz", base_url=base)
    except Exception as exc:
        return str(exc)
    return None if reply.ok else f"SearXNG answered HTTP {reply.status}"


SEARXNG = Provider(
    kind=KIND,
    name="searxng",
    build=_searxng,
    settings=(SEARXNG_URL, SEARXNG_COST),
    requires=(SEARXNG_URL,),
    cost_estimate=lambda settings: to_micro(settings.get("searxng_cost_usdc") or "0"),
    health=_searxng_health,
    description="SearXNG metasearch (self-hosted or any instance with JSON output).",
)


# -- Brave Search ---------------------------------------------------------------------------
_BRAVE = Upstream(
    family=KIND,
    name="brave",
    label="Brave Search",
    default_base_url="https://api.search.brave.com",
    description="Base URL of the Brave Search API (tests point it at a local server).",
    api_key="Brave Search API subscription token, sent as X-Subscription-Token. Secret.",
)
BRAVE_API_URL, BRAVE_API_KEY = _BRAVE.settings
BRAVE_COST = Setting(
    KIND, "brave_cost_usdc", "0.005", "What one Brave Search query costs us in USDC under the operator's plan."
)
BRAVE_MAX_COUNT = 20  # the web search endpoint's largest `count`
BRAVE_MAX_OFFSET = 9  # and its largest `offset` (pages of `count` results)


class BraveClient:
    """`GET <base>/res/v1/web/search?q=&count=[&offset=]` with `X-Subscription-Token` ->
    `{"type": "search", "web": {"results": [{title, url, description, ...}]}, ...}`."""

    def __init__(self, base_url: str, api_key: str, http: httpx.AsyncClient) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json", "X-Subscription-Token": api_key}
        self.http = http

    def __repr__(self) -> str:  # never the key
        return f"BraveClient({self.base_url!r})"

    async def search(self, query: str, count: int, page: int = 1) -> list[Hit]:
        params = {"q": query, "count": str(min(BRAVE_MAX_COUNT, count))}
        if page > 1:  # Brave's `offset` counts pages of `count` results from 0, up to 9
            params["offset"] = str(min(BRAVE_MAX_OFFSET, page - 1))
        body = await _BRAVE.get_json(
            self.http, "/res/v1/web/search", base_url=self.base_url, params=params, headers=self._headers
        )
        if not isinstance(body, dict):
            raise _BRAVE.unavailable(
                "Brave Search answered with something other than a search result.", reason="malformed"
            )
        web = body.get("web")
        if web is None:  # no web results for the query: the answer leaves `web` out
            return []
        if not isinstance(web, dict):
            raise _BRAVE.unavailable("Brave Search answered with a malformed `web` section.", reason="malformed")
        return _hits(_BRAVE, web.get("results", []), "description")[:count]


def _brave(settings: Mapping[str, str], http: httpx.AsyncClient) -> BraveClient:
    return BraveClient(_BRAVE.base_url(settings), _BRAVE.api_key(settings) or "", http)


BRAVE = Provider(
    kind=KIND,
    name="brave",
    build=_brave,
    settings=(BRAVE_API_URL, BRAVE_API_KEY, BRAVE_COST),
    requires=(BRAVE_API_KEY,),
    cost_estimate=lambda settings: to_micro(settings.get("brave_cost_usdc") or "0.005"),
    description="Brave Search API (web search endpoint).",
)

PROVIDERS = (SEARXNG, BRAVE)
