"""Product feed objects of ACP (`rfc.product_feeds`): feed metadata, products and variants.

The RFC gives the shapes in prose and examples only (no JSON Schema ships for 2026-01-30):
these types follow its field tables (§3.1, §3.2) and examples (§4.1, §5.3). Unknown keys
are kept out of the way (ignored on decode) since the RFC is a proposal still growing.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType


class FeedObject(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An object of the product feed RFC: unset fields left out, unknown keys ignored."""


class FeedMetadata(FeedObject):
    id: str
    target_country: str | UnsetType = UNSET
    updated_at: str | UnsetType = UNSET


class Description(FeedObject):
    plain: str | UnsetType = UNSET
    markdown: str | UnsetType = UNSET
    html: str | UnsetType = UNSET


class Media(FeedObject):
    type: Literal["image", "video"] | str
    url: str
    alt_text: str | UnsetType = UNSET


class Price(FeedObject):
    amount: int  # minor units
    currency: str  # ISO 4217, upper case in the RFC's examples


class Availability(FeedObject):
    available: bool
    status: str | UnsetType = UNSET  # in_stock, out_of_stock, backorder, pre_order, discontinued...


class OptionValue(FeedObject):
    name: str
    value: str


class Seller(FeedObject):
    name: str
    url: str | UnsetType = UNSET


class Variant(FeedObject):
    id: str
    title: str
    description: Description | UnsetType = UNSET
    url: str | UnsetType = UNSET
    media: list[Media] | UnsetType = UNSET
    price: Price | UnsetType = UNSET
    list_price: Price | UnsetType = UNSET
    unit_price: Price | UnsetType = UNSET
    availability: Availability | UnsetType = UNSET
    categories: list[str] | UnsetType = UNSET
    condition: str | UnsetType = UNSET
    variant_options: list[OptionValue] | UnsetType = UNSET
    seller: Seller | UnsetType = UNSET
    marketplace: Seller | UnsetType = UNSET


class Product(FeedObject):
    id: str
    variants: list[Variant]
    title: str | UnsetType = UNSET
    description: Description | UnsetType = UNSET
    url: str | UnsetType = UNSET
    media: list[Media] | UnsetType = UNSET


class FeedProducts(FeedObject):
    """`GET /feeds/{id}/products`: the full current product set."""

    products: list[Product]
