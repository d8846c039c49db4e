"""ACP discovery, the buyer side: what a merchant's `/.well-known/acp.json` (rfc.discovery)
tells the operator's merchant configuration when it leaves something out.

A merchant configured with its feed URL and an API base that has a path (`https://host/v1`) is
taken as given and nothing is fetched, so a merchant without discovery works as before. One
configured with a bare origin (`https://host`, the RFC's "just a domain") or without a feed
URL is discovered: `<origin>/.well-known/acp.json` must be the RFC's document, speak REST,
offer `checkout`, and share an API version with this service. Then

- the API base is the document's `api_base_url`, unless the operator's `base_url` has a path;
- the API version is the operator's (refused when the merchant does not list it), else the
  latest the merchant lists that this service speaks;
- the feed URL is the operator's, else the target of the answer's `Link` with the relation
  `acp.discovery.FEED_REL` (a Tollway merchant sends it; the RFC has no member for a feed yet).

A 404 or an answer that is not JSON means the merchant publishes no discovery (§5.3): its
fields are then taken as the operator gave them, and without a feed URL that is 400 naming
`feed_url`. What else goes wrong is said: an unreachable host, another status, JSON that is
not the document (naming the member) answer 502 `discovery_unreadable`; no shared version,
no checkout, no feed named answer 400 naming the field the operator has to give."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx
import msgspec

from tollway import Refusal

from .. import acp
from ..acp.discovery import FEED_REL, WELL_KNOWN, DiscoveryResponse
from .acp_client import USER_AGENT
from .wire import CommerceMerchantIn

TIMEOUT_S = 10.0
MAX_BYTES = 64 * 1024  # a discovery document is a few hundred bytes


@dataclass(frozen=True)
class Resolved:
    """Where a merchant's API and feed are, and the API version to speak to it."""

    base_url: str
    feed_url: str
    api_version: str


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _has_path(url: str) -> bool:
    return urlsplit(url).path.strip("/") != ""


def _missing(field: str, message: str) -> Refusal:
    return Refusal("invalid_request", f"{field} {message}.", details=[{"field": field, "message": message}])


def _unreadable(url: str, why: str) -> Refusal:
    return Refusal("discovery_unreadable", f"The merchant's discovery document {url} {why}.", status=502)


async def fetch(http: httpx.AsyncClient, base_url: str) -> tuple[str, DiscoveryResponse | None, str | None]:
    """(its URL, the merchant's discovery document or None when it publishes none, the feed URL
    its Link names or None). None: a 404 or an answer that is not JSON (rfc.discovery §5.3)."""
    url = _origin(base_url) + WELL_KNOWN
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    try:
        reply = await http.get(url, headers=headers, timeout=TIMEOUT_S, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise _unreadable(url, f"could not be read ({type(exc).__name__}: {exc or 'no answer'})") from exc
    if reply.status_code == 404:
        return url, None, None
    if reply.status_code != 200:
        raise _unreadable(url, f"answered HTTP {reply.status_code} (200 expected)")
    if len(reply.content) > MAX_BYTES:
        raise _unreadable(url, f"is larger than {MAX_BYTES} bytes")
    try:
        document = msgspec.json.decode(reply.content, type=DiscoveryResponse)
    except msgspec.ValidationError as exc:
        raise _unreadable(url, f"is not an ACP discovery document: {exc}") from exc
    except msgspec.DecodeError:
        return url, None, None  # a page that is not JSON: no ACP discovery here
    problem = _problem(document)
    if problem:
        raise _unreadable(url, f"is not an ACP discovery document: {problem}")
    link = reply.links.get(FEED_REL, {}).get("url")
    return url, document, urljoin(str(reply.url), link) if link else None  # relative to where it was read


def _problem(document: DiscoveryResponse) -> str | None:
    if document.protocol.name != "acp":
        return f"protocol.name is {document.protocol.name!r}, not 'acp'"
    if not document.protocol.supported_versions:
        return "protocol.supported_versions is empty"
    if not document.api_base_url.startswith(("https://", "http://")):
        return "api_base_url is no http(s) URL"
    if "rest" not in document.transports:
        return "transports does not include 'rest'"
    return None


async def resolve(http: httpx.AsyncClient, body: CommerceMerchantIn) -> Resolved:
    """The merchant's API base, feed URL and version: the operator's, what discovery adds."""
    base_url = body.base_url.rstrip("/")
    if body.feed_url is not None and _has_path(base_url):
        return Resolved(base_url, body.feed_url.rstrip("/"), body.api_version or acp.API_VERSION)
    url, document, linked_feed = await fetch(http, base_url)
    if document is None:  # no discovery: the operator's fields as they are, when they are enough
        if body.feed_url is None:
            raise _missing(
                "feed_url",
                f"is required: the merchant publishes no ACP discovery document at {url} (404 or not JSON)",
            )
        return Resolved(base_url, body.feed_url.rstrip("/"), body.api_version or acp.API_VERSION)
    if "checkout" not in document.capabilities.services:
        raise _missing("base_url", f"is no ACP checkout: {url} lists no 'checkout' service")
    theirs = document.protocol.supported_versions
    if body.api_version is not None:
        if body.api_version not in theirs:
            raise _missing("api_version", f"{body.api_version} is not one the merchant supports ({', '.join(theirs)})")
        version = body.api_version
    else:
        shared = sorted(set(theirs) & set(acp.SUPPORTED_VERSIONS))
        if not shared:
            raise _missing(
                "api_version",
                f"cannot be chosen: the merchant supports {', '.join(theirs)}, this service "
                f"{', '.join(acp.SUPPORTED_VERSIONS)}",
            )
        version = shared[-1]
    feed_url = body.feed_url or linked_feed
    if feed_url is None:
        raise _missing("feed_url", f"is required: {url} names no product feed")
    api_base = base_url if _has_path(base_url) else document.api_base_url.rstrip("/")
    return Resolved(api_base, feed_url.rstrip("/"), version)
