"""ACP discovery on the wire (`rfc.discovery` §4.2): the document at `/.well-known/acp.json`,
shared by the seller (which serves it) and the buyer (which reads a merchant's). No JSON
Schema for it ships with 2026-01-30: these types follow the RFC's field tables. Unknown
members are ignored on decode (the RFC is a proposal still growing)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

WELL_KNOWN = "/.well-known/acp.json"
# The RFC 8288 relation of the product feed's `Link` on a discovery answer (Tollway's own: the RFC
# has no member for it yet, rfc.product_feeds §3.5). Its target is a feed URL as the buyer reads
# one: a snapshot (`/metadata.json`, `/products.jsonl`) or, as a Tollway merchant publishes it,
# FeedMetadata there and the products at `/products`.
FEED_REL = "tag:tollway,2026:acp-product-feed"


class DiscoveryObject(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An object of the discovery document: unset members left out, unknown ones ignored."""


class DiscoveryProtocol(DiscoveryObject):
    name: str  # always "acp"
    version: str  # the latest supported, YYYY-MM-DD
    supported_versions: list[str]  # oldest first, the last one `version`
    documentation_url: str | UnsetType = UNSET


class DiscoveryExtension(DiscoveryObject):
    name: str
    spec: str | UnsetType = UNSET
    schema: str | UnsetType = UNSET


class DiscoveryCapabilities(DiscoveryObject):
    services: list[str]  # checkout, orders, delegate_payment, carts (and feeds, rfc.product_feeds)
    extensions: list[DiscoveryExtension] | UnsetType = UNSET
    intervention_types: list[str] | UnsetType = UNSET  # 3ds, biometric, address_verification
    supported_currencies: list[str] | UnsetType = UNSET
    supported_locales: list[str] | UnsetType = UNSET


class DiscoveryResponse(DiscoveryObject):
    protocol: DiscoveryProtocol
    api_base_url: str
    transports: list[str]  # at least "rest"
    capabilities: DiscoveryCapabilities
