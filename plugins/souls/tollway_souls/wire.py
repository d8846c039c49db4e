"""The souls marketplace's request and answer shapes: soul agents and services with the
reference's field names, registration, the seller dashboard, orders, ratings, payouts and
the buying tool; money is a 6-decimal USDC string outside."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType

Slug = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")]
Category = Annotated[str, Meta(min_length=1, max_length=40, pattern=r"^[a-z0-9][a-z0-9_-]*$")]
# USDC as a decimal string: 0.01 to 1000 (checked beside the pattern), up to 6 decimals
Price = Annotated[str, Meta(pattern=r"^[0-9]{1,4}(\.[0-9]{1,6})?$")]
Name = Annotated[str, Meta(min_length=1, max_length=100)]
Url = Annotated[str, Meta(min_length=8, max_length=2048, pattern=r"^https?://")]
SoulMd = Annotated[str, Meta(max_length=20_000)]
Title = Annotated[str, Meta(min_length=1, max_length=120)]
Description = Annotated[str, Meta(max_length=5_000)]


class ServiceIn(msgspec.Struct, forbid_unknown_fields=True):
    """A service a soul offers."""

    slug: Slug
    title: Title
    price_usdc: Price
    category: Category
    description: Description = ""
    enabled: bool = True


class Registration(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A soul's registration: its profile, its services, and where its orders are sent."""

    slug: Slug
    name: Name
    category: Category
    display_name: Name | UnsetType = UNSET
    soul_md: SoulMd = ""
    avatar_url: Url | UnsetType = UNSET
    webhook_url: Url | UnsetType = UNSET
    services: Annotated[list[ServiceIn], Meta(max_length=50)] = []


class ProfileChange(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Fields of a soul's profile to change (a null avatar_url or webhook_url removes it)."""

    name: Name | UnsetType = UNSET
    display_name: Name | UnsetType = UNSET
    category: Category | UnsetType = UNSET
    soul_md: SoulMd | UnsetType = UNSET
    avatar_url: Url | None | UnsetType = UNSET
    webhook_url: Url | None | UnsetType = UNSET


class ServiceChange(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Fields of a service to change; `enabled: false` takes it off sale."""

    title: Title | UnsetType = UNSET
    description: Description | UnsetType = UNSET
    price_usdc: Price | UnsetType = UNSET
    category: Category | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET


class Service(msgspec.Struct):
    id: str
    slug: str
    title: str
    description: str
    price_usdc: str
    category: str
    enabled: bool
    created_at: str


class SoulAgent(msgspec.Struct):
    id: str
    wallet_address: str | None
    slug: str
    name: str
    display_name: str
    category: str
    soul_md: str
    soul_price_usdc: str | None  # the lowest price among its enabled services
    avatar_url: str | None
    rating_avg: float | None
    rating_count: int
    services: list[Service]
    created_at: str


class Registered(msgspec.Struct):
    soul_agent: SoulAgent
    soul_key: str  # shown once


class SoulList(msgspec.Struct):
    souls: list[SoulAgent]
    total: int


class SearchResults(msgspec.Struct):
    results: list[SoulAgent]


class KeyRotated(msgspec.Struct):
    soul_agent_id: str
    soul_key: str  # shown once; the previous key stopped working
    rotated_at: str
    new_address_payouts_held_until: str  # until then a payout to a new address needs the wallet's write proof


class KeyRevoked(msgspec.Struct):
    soul_agent_id: str
    revoked: bool
    revoked_at: str


class WebhookInfo(msgspec.Struct):
    url: str | None
    secret: str | None


class Order(msgspec.Struct):
    order_id: str  # the buyer's request id: the buyer polls it as a job
    soul_agent_id: str
    service: str
    state: str  # open, fulfilled, declined, expired, refunded (a sale paid by card over ACP, refunded in full)
    price_usdc: str
    seller_share_usdc: str
    service_fee: str
    request: Any
    result: Any
    note: str | None
    payment_status: str  # the buyer's receipt status: settled, pending, refunded, ...
    deadline_at: str
    created_at: str
    updated_at: str


class OrderList(msgspec.Struct):
    orders: list[Order]
    count: int
    has_more: bool


class Fulfilment(msgspec.Struct, forbid_unknown_fields=True):
    """What the seller delivers: any JSON object, handed to the buyer as the job's result."""

    result: dict[str, Any]


class Decline(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    reason: Annotated[str, Meta(max_length=1000)] = "The seller declined the order."


class Earnings(msgspec.Struct):
    soul_agent_id: str
    earned_usdc: str  # the seller's shares of fulfilled orders
    service_fees_usdc: str  # what the service kept of them
    orders_fulfilled: int
    orders_open: int
    paid_out_usdc: str
    credits_balance: str  # what the seller's agent can spend or withdraw now


class PayoutRequest(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A withdrawal of the seller's credits to its wallet (or `to_address`)."""

    amount_usdc: Annotated[str, Meta(pattern=r"^[0-9]{1,7}(\.[0-9]{1,6})?$")]
    to_address: Annotated[str, Meta(pattern=r"^0x[0-9a-fA-F]{40}$")] | UnsetType = UNSET


class Payout(msgspec.Struct):
    payout_id: str
    amount_usdc: str
    to_address: str
    status: str  # sending, paid, failed
    settlement_tx: str | None
    reason: str | None
    created_at: str
    updated_at: str


class PayoutList(msgspec.Struct):
    payouts: list[Payout]
    count: int


class RatingIn(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A buyer's rating of a service it bought (and received)."""

    service: Slug
    stars: Annotated[int, Meta(ge=1, le=5)]
    comment: Annotated[str, Meta(max_length=1000)] | UnsetType = UNSET


class Rating(msgspec.Struct):
    soul_agent_id: str
    service: str
    stars: int
    comment: str | None
    rating_avg: float | None
    rating_count: int
    created_at: str
    updated_at: str


class BuyInput(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A purchase: the soul and service by slug, the price as listed (a changed price is
    refused before payment), what is asked for, and how long the seller has to deliver."""

    soul: Slug
    service: Slug
    price_usdc: Price
    request: dict[str, Any] = {}
    deadline_s: Annotated[int, Meta(ge=60, le=604_800)] = 86_400


class BuyResult(msgspec.Struct):
    """The job's result once the seller fulfilled the order."""

    order_id: str
    soul: str
    service: str
    result: dict[str, Any]
    fulfilled_at: str
