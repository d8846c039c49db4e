"""ACP discovery, the seller side: `GET /.well-known/acp.json` (rfc.discovery), public, the
document an agent reads before its first checkout call to learn that this service speaks ACP,
where its API is, which versions it accepts and what it offers.

Nothing in it is written by hand: each member comes from what already drives the service —
the versions the checkout gate accepts (`acp.SUPPORTED_VERSIONS`), the API base the checkout
routes are declared under, the currency sessions are priced in, the interventions the
session's capabilities offer, and the feed routes for the `feeds` service. The RFC forbids
payment handlers, PSP details and merchant ids in it (§7.1, §7.4), so none appear: handlers
stay in each session's `capabilities`. The product feed's URL is no member of the RFC's
document either (rfc.product_feeds §3.5 leaves feed descriptors to a later update), so it is
given beside the document, as a `Link` header (RFC 8288) with the relation `FEED_REL`, which
keeps the JSON exactly the RFC's (docs/commerce.md, "Discovery").

Without a configured `psp` provider the service sells nothing (every checkout route answers
503), so the document answers 503 as well, with `Retry-After` and not cached, rather than a
200 an agent would cache for an hour or a 404 telling it never to come back."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from tollway import Page, Route, RouteCall

from . import acp, sessions
from .acp import AcpError
from .acp.discovery import (
    FEED_REL,
    WELL_KNOWN,
    DiscoveryCapabilities,
    DiscoveryExtension,
    DiscoveryProtocol,
    DiscoveryResponse,
)
from .routes import ACP_ROUTES, FEED_ROUTES, JSON
from .settings import FAMILY, public_url

PATH = WELL_KNOWN
CACHE = "public, max-age=3600"  # rfc.discovery §4.1: at least an hour
RETRY_AFTER_S = 60


def _route(routes: tuple[Route, ...], name: str) -> Route:
    return next(r for r in routes if r.name == name)


# Where the API's resources hang: the create route's path less its resource.
CREATE = _route(ACP_ROUTES, "acp_create_checkout_session")
API_PREFIX = CREATE.path.removesuffix("/checkout_sessions")
FEED = _route(FEED_ROUTES, "commerce_feed")


def _extensions(capabilities: acp.Capabilities) -> list[DiscoveryExtension] | UnsetType:
    declared = capabilities.extensions
    if declared is UNSET or not declared:
        return UNSET
    return [
        DiscoveryExtension(name=e)
        if isinstance(e, str)
        else DiscoveryExtension(name=e.name, spec=e.spec, schema=e.schema)
        for e in declared
    ]


def document(settings: Any, psp: Any) -> DiscoveryResponse:
    """The discovery document of this service, with `psp` the configured `psp` client."""
    offered = sessions.capabilities(psp)
    versions = sorted(acp.SUPPORTED_VERSIONS)  # YYYY-MM-DD: sorted is chronological
    interventions = offered.interventions.supported if offered.interventions is not UNSET else UNSET
    return DiscoveryResponse(
        protocol=DiscoveryProtocol(name="acp", version=versions[-1], supported_versions=versions),
        api_base_url=public_url(settings) + API_PREFIX,
        transports=["rest"],  # the MCP front serves Tollway's tools, not ACP's MCP binding
        capabilities=DiscoveryCapabilities(
            services=["checkout", "feeds"],
            extensions=_extensions(offered),
            intervention_types=list(interventions) if interventions else UNSET,  # type: ignore[arg-type]
            supported_currencies=[sessions.CURRENCY],
        ),
    )


def feed_url(settings: Any) -> str:
    return public_url(settings) + FEED.path


async def _discovery(call: RouteCall) -> Page:
    settings = call.platform.settings(FAMILY)
    try:
        psp = sessions.psp_of(call.platform)
    except AcpError as error:
        headers = {"Retry-After": str(RETRY_AFTER_S), "Cache-Control": "no-store"}
        return Page(error.body(), status=503, headers=headers, media_type=JSON)
    body = msgspec.json.encode(document(settings, psp))
    headers = {"Cache-Control": CACHE, "Link": f'<{feed_url(settings)}>; rel="{FEED_REL}"'}
    return Page(body, headers=headers, media_type=JSON)


ROUTE = Route(
    method="GET",
    path=PATH,
    name="acp_discovery",
    title="ACP discovery document",
    description="The Agentic Commerce Protocol discovery document (rfc.discovery): protocol versions, the API "
    "base URL, transports and services; public, cacheable for an hour. The product feed's URL is its Link header "
    f'(rel="{FEED_REL}"). 503 while no payment service provider is configured.',
    handle=_discovery,
    auth="public",
    page=True,
    media_type=JSON,
    answer_type=DiscoveryResponse,
    error_type=acp.Error,
    tags=("acp",),
    statuses=(429, 503),
)
