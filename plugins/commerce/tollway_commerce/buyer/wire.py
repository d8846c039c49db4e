"""The buyer side's request and answer shapes: the operator's merchants, commerce_search and
commerce_buy. Prices are integers of the currency's minor unit (as ACP sends them) beside a
6-decimal USDC string; times are RFC 3339. Struct names start with `Commerce` (they are
OpenAPI component names, unique across plugins)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from tollway import Evidence

MerchantId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=64,
        pattern=r"^[a-z0-9][a-z0-9-]*$",
        description="The merchant's id.",
    ),
]
Url = Annotated[str, Meta(min_length=8, max_length=2048, pattern=r"^https?://")]
Usdc = Annotated[
    str, Meta(pattern=r"^[0-9]{1,6}(\.[0-9]{1,6})?$", description="USDC as a decimal string, up to 6 decimals.")
]
Secret = Annotated[str, Meta(min_length=1, max_length=4096)]
Text200 = Annotated[str, Meta(min_length=1, max_length=200)]


# --- operator: merchants -------------------------------------------------------------------


class CommerceMerchantIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """An ACP merchant agents may buy from through commerce_buy (created, or replaced when the id exists)."""

    id: MerchantId
    name: Text200
    base_url: Annotated[
        Url,
        Meta(
            description="The merchant's ACP API base (checkout sessions are <base_url>/checkout_sessions), or its "
            "origin alone: then the base is its ACP discovery document's api_base_url (/.well-known/acp.json)."
        ),
    ]
    feed_url: Annotated[
        Url | None,
        Meta(
            description="Where the merchant publishes its product feed snapshot: <feed_url>/metadata.json and "
            "/products.jsonl. Null: the feed its ACP discovery document links."
        ),
    ] = None
    acp_token: Annotated[
        Secret, Meta(description="The bearer token the merchant issued to this service. Never answered back.")
    ]
    api_version: Annotated[
        Annotated[str, Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")] | None,
        Meta(
            description="Null: the latest version both sides support when the merchant is discovered, else 2026-01-30."
        ),
    ] = None
    signing_key: Annotated[
        Secret | None,
        Meta(
            description="Shared key signing our requests (Signature, Timestamp headers); null: requests are not signed."
        ),
    ] = None
    webhook_secret: Annotated[
        Secret | None, Meta(description="Shared key verifying the merchant's order webhooks; null: they are refused.")
    ] = None


class CommerceFeedState(msgspec.Struct):
    feed_id: str | None
    updated_at: str | None  # the feed's own updated_at
    read_at: str | None  # our last successful read
    tried_at: str | None
    error: str | None
    products: int


class CommerceMerchant(msgspec.Struct):
    """A configured merchant as the operator reads it back: never a token or key, only whether one is set."""

    id: str
    name: str
    base_url: str
    feed_url: str
    api_version: str
    acp_token_set: bool
    signing_key_set: bool
    webhook_secret_set: bool
    webhook_path: str  # where the merchant posts its order events, on this service
    feed: CommerceFeedState
    created_at: str
    updated_at: str


class CommerceMerchantList(msgspec.Struct):
    merchants: list[CommerceMerchant]
    count: int


class CommerceMerchantDeleted(msgspec.Struct):
    id: str
    deleted: bool


class CommerceHeldOrderIn(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """How to end an order held for the operator (`outcome_unknown`)."""

    outcome: Annotated[
        Literal["ask", "completed", "not_completed"],
        Meta(
            description="`ask` (default): ask the merchant again now and go by its answer. `completed` / "
            "`not_completed`: what the merchant told the operator out of band (the order is settled, or "
            "failed and refunded)."
        ),
    ] = "ask"
    merchant_order_id: Annotated[str, Meta(min_length=1, max_length=200)] | None = None


class CommerceHeldOrderOut(msgspec.Struct, omit_defaults=True):
    order_id: str
    state: str  # the order's: completed, failed, or still outcome_unknown
    job_status: str  # the job's: completed, failed, or still processing
    heard: str | None = None  # what the merchant answered, when it is still unknown


class CommerceFeedRead(msgspec.Struct):
    id: str
    changes: int
    feed: CommerceFeedState


# --- commerce_search -----------------------------------------------------------------------


class CommerceSearchInput(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    query: Annotated[str, Meta(min_length=1, max_length=200, description="Words to find in titles and descriptions.")]
    merchant: MerchantId | None = None
    min_price_usdc: Annotated[Usdc | None, Meta(description="Lowest USDC equivalent (inclusive).")] = None
    max_price_usdc: Annotated[Usdc | None, Meta(description="Highest USDC equivalent (inclusive).")] = None
    in_stock: Annotated[bool, Meta(description="Only products the feed says are available.")] = False
    limit: Annotated[int, Meta(ge=1, le=50)] = 10
    offset: Annotated[int, Meta(ge=0, le=10_000)] = 0


class CommercePrice(msgspec.Struct):
    amount: int  # minor units of `currency`
    currency: str  # ISO 4217, lower case
    usdc: str | None  # the USDC equivalent (docs/commerce.md); null when the currency has none


class CommerceProduct(msgspec.Struct):
    merchant: str
    merchant_name: str
    product_id: str  # what commerce_buy's items name (the feed's variant id)
    group_id: str  # the feed's product id, shared by its variants
    title: str
    description: str
    price: CommercePrice | None
    available: bool
    availability: str | None
    url: str | None
    image_url: str | None
    seller: str | None
    feed_updated_at: str | None  # the merchant's feed's own date
    feed_read_at: str | None  # when this service last read the feed


class CommerceSearchResult(msgspec.Struct):
    products: list[CommerceProduct]
    total: int


class CommerceSearchAnswer(msgspec.Struct):
    result: CommerceSearchResult
    evidence: Evidence


# --- commerce_buy --------------------------------------------------------------------------


class CommerceItem(msgspec.Struct, forbid_unknown_fields=True):
    merchant: MerchantId
    product_id: Annotated[str, Meta(min_length=1, max_length=500, description="A product_id commerce_search answered.")]
    quantity: Annotated[int, Meta(ge=1, le=99)] = 1


class CommerceBuyer(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    name: Text200
    email: Annotated[str, Meta(min_length=3, max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
    phone_number: Annotated[str, Meta(min_length=3, max_length=30)] | None = None


class CommerceAddress(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    name: Annotated[str, Meta(min_length=1, max_length=256)]
    line_one: Annotated[str, Meta(min_length=1, max_length=60)]
    city: Annotated[str, Meta(min_length=1, max_length=60)]
    state: Annotated[str, Meta(min_length=1, max_length=60)]
    country: Annotated[str, Meta(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2.")]
    postal_code: Annotated[str, Meta(min_length=1, max_length=20)]
    line_two: Annotated[str, Meta(max_length=60)] = ""


class CommerceBuyInput(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    items: Annotated[list[CommerceItem], Meta(min_length=1, max_length=20, description="All from one merchant.")]
    buyer: CommerceBuyer
    fulfillment_address: CommerceAddress
    max_total_usdc: Annotated[
        Usdc, Meta(description="Cap on the whole order (items, tax, shipping), charged up front.")
    ]
    fulfillment_option: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=200,
                description="Merchant's option id; default: its cheapest.",
            ),
        ]
        | None
    ) = None


class CommerceOrderOut(msgspec.Struct):
    order_id: str  # this service's (the job's request id)
    merchant: str
    merchant_order_id: str
    checkout_session_id: str
    status: str  # the merchant's order status
    permalink_url: str | None
    total: CommercePrice  # what the merchant charged
    spent_usdc: str  # its USDC equivalent, kept
    returned_usdc: str  # given back to the agent's credits
    fee_usdc: str


class CommerceBuyAnswer(msgspec.Struct):
    result: CommerceOrderOut
    evidence: Evidence
