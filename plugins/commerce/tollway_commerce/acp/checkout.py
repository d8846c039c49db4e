"""The checkout wire types of ACP 2026-01-30 (`openapi.agentic_checkout.yaml`, `schema.agentic_checkout.json`).

One msgspec type per schema object, named as the schema names it, both for what a
merchant answers and what an agent platform sends: the seller side decodes requests and
encodes sessions with them, the buyer side the other way round.

Every optional field defaults to `UNSET`, so it is left out of the JSON when not set: the
2026-01-30 schema allows `null` nowhere, and RFC §6.2 holds an absent key and a `null`
apart. Every object refuses keys the schema does not list (`additionalProperties: false`),
except where the schema itself allows more (`AuthenticationMetadata`, `IntentTrace`'s
metadata, free `metadata` and handler `config` objects, kept as JSON objects). Amounts are
integers of minor units throughout.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

API_VERSION = "2026-01-30"
"""The one ACP version this package speaks: the `API-Version` header's value."""

SUPPORTED_VERSIONS = (API_VERSION,)


class AcpObject(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """An object of the ACP schema: unknown keys refused, unset fields left out."""


# --- enums, as the schema spells them ---------------------------------------------------------

SessionStatus = Literal[
    "incomplete",
    "not_ready_for_payment",
    "requires_escalation",
    "authentication_required",
    "ready_for_payment",
    "pending_approval",
    "complete_in_progress",
    "completed",
    "canceled",
    "in_progress",
    "expired",
]
TotalType = Literal[
    "items_base_amount",
    "items_discount",
    "subtotal",
    "discount",
    "fulfillment",
    "tax",
    "fee",
    "gift_wrap",
    "tip",
    "store_credit",
    "total",
]
ContentType = Literal["plain", "markdown"]
Severity = Literal["info", "low", "medium", "high", "critical"]
Resolution = Literal["recoverable", "requires_buyer_input", "requires_buyer_review"]
WarningCode = Literal[
    "low_stock",
    "high_demand",
    "shipping_delay",
    "price_change",
    "expiring_promotion",
    "limited_availability",
    "discount_code_expired",
    "discount_code_invalid",
    "discount_code_already_applied",
    "discount_code_combination_disallowed",
    "discount_code_minimum_not_met",
    "discount_code_user_not_logged_in",
    "discount_code_user_ineligible",
    "discount_code_usage_limit_reached",
]
ErrorMessageCode = Literal[
    "missing",
    "invalid",
    "out_of_stock",
    "payment_declined",
    "requires_sign_in",
    "requires_3ds",
    "low_stock",
    "quantity_exceeded",
    "coupon_invalid",
    "coupon_expired",
    "minimum_not_met",
    "maximum_exceeded",
    "region_restricted",
    "age_verification_required",
    "approval_required",
    "unsupported",
    "not_found",
    "conflict",
    "rate_limited",
    "expired",
    "intervention_required",
]
LinkType = Literal[
    "terms_of_use",
    "privacy_policy",
    "return_policy",
    "shipping_policy",
    "contact_us",
    "about_us",
    "faq",
    "support",
]
FulfillmentType = Literal["shipping", "digital", "pickup", "local_delivery"]
ErrorType = Literal["invalid_request", "request_not_idempotent", "processing_error", "service_unavailable"]
OrderStatus = Literal["confirmed", "processing", "shipped", "delivered"]
AvailabilityStatus = Literal["in_stock", "low_stock", "out_of_stock", "backorder", "pre_order"]


# --- people and places ------------------------------------------------------------------------


class Address(AcpObject):
    name: str
    line_one: str
    city: str
    state: str
    country: str
    postal_code: str
    line_two: str | UnsetType = UNSET


class CompanyInfo(AcpObject):
    name: str
    tax_id: str | UnsetType = UNSET
    department: str | UnsetType = UNSET
    cost_center: str | UnsetType = UNSET


class LoyaltyInfo(AcpObject):
    tier: str | UnsetType = UNSET
    points_balance: int | UnsetType = UNSET
    member_since: str | UnsetType = UNSET


class TaxExemption(AcpObject):
    certificate_id: str
    certificate_type: Literal["resale", "exempt_organization", "government"]
    exempt_regions: list[str] | UnsetType = UNSET
    expires_at: str | UnsetType = UNSET


class Buyer(AcpObject):
    email: str
    first_name: str | UnsetType = UNSET
    last_name: str | UnsetType = UNSET
    full_name: str | UnsetType = UNSET
    phone_number: str | UnsetType = UNSET
    customer_id: str | UnsetType = UNSET
    account_type: Literal["guest", "registered", "business"] | UnsetType = UNSET
    authentication_status: Literal["authenticated", "guest", "requires_signin"] | UnsetType = UNSET
    company: CompanyInfo | UnsetType = UNSET
    loyalty: LoyaltyInfo | UnsetType = UNSET
    tax_exemption: TaxExemption | UnsetType = UNSET


class FulfillmentDetails(AcpObject):
    name: str | UnsetType = UNSET
    phone_number: str | UnsetType = UNSET
    email: str | UnsetType = UNSET
    address: Address | UnsetType = UNSET


# --- capabilities and payment handlers --------------------------------------------------------


class PaymentHandler(AcpObject):
    id: str
    name: str
    version: str
    spec: str
    requires_delegate_payment: bool
    requires_pci_compliance: bool
    psp: str
    config_schema: str
    instrument_schemas: list[str]
    config: dict[str, Any]


class Payment(AcpObject):
    handlers: list[PaymentHandler]


class InterventionCapabilities(AcpObject):
    supported: list[Literal["3ds", "biometric", "address_verification"]] | UnsetType = UNSET
    required: list[Literal["3ds", "biometric"]] | UnsetType = UNSET
    enforcement: Literal["always", "conditional", "optional"] | UnsetType = UNSET
    display_context: Literal["native", "webview", "modal", "redirect"] | UnsetType = UNSET
    redirect_context: Literal["in_app", "external_browser", "none"] | UnsetType = UNSET
    max_redirects: int | UnsetType = UNSET
    max_interaction_depth: int | UnsetType = UNSET


class ExtensionDeclaration(AcpObject):
    name: str
    extends: list[str] | UnsetType = UNSET
    schema: str | UnsetType = UNSET
    spec: str | UnsetType = UNSET


class Capabilities(AcpObject):
    """What each side can do (rfc.capability_negotiation): the agent's in a create
    request, the merchant's (payment handlers, interventions) on every session."""

    payment: Payment | UnsetType = UNSET
    interventions: InterventionCapabilities | UnsetType = UNSET
    # The schema allows a list of names or a list of declarations, not a mix; a mix decodes
    # here and is refused by the schema check.
    extensions: list[str | ExtensionDeclaration] | UnsetType = UNSET


class ProtocolVersion(AcpObject):
    version: str


# --- items, line items, totals ----------------------------------------------------------------


class Item(AcpObject):
    """An item in a create or update request, and a line item's item. 2026-01-30's `Item`
    has no quantity (and refuses extra keys, although the RFC's prose examples send one):
    a request asks for N units of an item by listing it N times; the merchant answers one
    line item per item id with its `quantity` (docs/commerce.md, "Decisions")."""

    id: str
    name: str | UnsetType = UNSET
    unit_amount: int | UnsetType = UNSET


class TaxBreakdownItem(AcpObject):
    jurisdiction: str
    rate: float
    amount: int


class Total(AcpObject):
    type: TotalType
    display_text: str
    amount: int
    presentment_amount: int | UnsetType = UNSET
    description: str | UnsetType = UNSET
    breakdown: list[TaxBreakdownItem] | UnsetType = UNSET


class Disclosure(AcpObject):
    type: Literal["disclaimer"]
    content_type: ContentType
    content: str


class CustomAttribute(AcpObject):
    display_name: str
    value: str


class MarketplaceSellerDetails(AcpObject):
    name: str


class VariantOption(AcpObject):
    name: str
    value: str


class WeightInfo(AcpObject):
    value: float
    unit: Literal["g", "kg", "oz", "lb"]


class DimensionsInfo(AcpObject):
    length: float
    width: float
    height: float
    unit: Literal["cm", "in"]


class DiscountDetail(AcpObject):
    type: Literal["percentage", "fixed", "bogo", "volume"]
    amount: int
    code: str | UnsetType = UNSET
    source: Literal["coupon", "automatic", "loyalty"] | UnsetType = UNSET


class LineItem(AcpObject):
    id: str
    item: Item
    quantity: int
    totals: list[Total]
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    images: list[str] | UnsetType = UNSET
    unit_amount: int | UnsetType = UNSET
    disclosures: list[Disclosure] | UnsetType = UNSET
    custom_attributes: list[CustomAttribute] | UnsetType = UNSET
    marketplace_seller_details: MarketplaceSellerDetails | UnsetType = UNSET
    product_id: str | UnsetType = UNSET
    sku: str | UnsetType = UNSET
    variant_id: str | UnsetType = UNSET
    category: str | UnsetType = UNSET
    tags: list[str] | UnsetType = UNSET
    weight: WeightInfo | UnsetType = UNSET
    dimensions: DimensionsInfo | UnsetType = UNSET
    availability_status: AvailabilityStatus | UnsetType = UNSET
    available_quantity: int | UnsetType = UNSET
    max_quantity_per_order: int | UnsetType = UNSET
    fulfillable_on: str | UnsetType = UNSET
    variant_options: list[VariantOption] | UnsetType = UNSET
    discount_details: list[DiscountDetail] | UnsetType = UNSET
    tax_exempt: bool | UnsetType = UNSET
    tax_exemption_reason: str | UnsetType = UNSET
    parent_id: str | UnsetType = UNSET


# --- fulfilment -------------------------------------------------------------------------------


class FulfillmentOptionShipping(AcpObject, tag_field="type", tag="shipping"):
    id: str
    title: str
    totals: list[Total]
    description: str | UnsetType = UNSET
    carrier: str | UnsetType = UNSET
    earliest_delivery_time: str | UnsetType = UNSET
    latest_delivery_time: str | UnsetType = UNSET


class FulfillmentOptionDigital(AcpObject, tag_field="type", tag="digital"):
    id: str
    title: str
    totals: list[Total]
    description: str | UnsetType = UNSET


class PickupLocation(msgspec.Struct, kw_only=True, omit_defaults=True):
    # The schema leaves this object open (no additionalProperties: false).
    name: str
    address: Address
    phone: str | UnsetType = UNSET
    instructions: str | UnsetType = UNSET


class FulfillmentOptionPickup(AcpObject, tag_field="type", tag="pickup"):
    id: str
    title: str
    location: PickupLocation
    totals: list[Total]
    description: str | UnsetType = UNSET
    pickup_type: Literal["in_store", "curbside", "locker"] | UnsetType = UNSET
    ready_by: str | UnsetType = UNSET
    pickup_by: str | UnsetType = UNSET


class DeliveryWindow(msgspec.Struct, kw_only=True, omit_defaults=True):
    start: str
    end: str


class ServiceArea(msgspec.Struct, kw_only=True, omit_defaults=True):
    radius_miles: float | UnsetType = UNSET
    center_postal_code: str | UnsetType = UNSET


class FulfillmentOptionLocalDelivery(AcpObject, tag_field="type", tag="local_delivery"):
    id: str
    title: str
    totals: list[Total]
    description: str | UnsetType = UNSET
    delivery_window: DeliveryWindow | UnsetType = UNSET
    service_area: ServiceArea | UnsetType = UNSET


FulfillmentOption = (
    FulfillmentOptionShipping | FulfillmentOptionDigital | FulfillmentOptionPickup | FulfillmentOptionLocalDelivery
)


class SelectedFulfillmentOption(AcpObject):
    type: FulfillmentType
    option_id: str
    item_ids: list[str]


class FulfillmentGroup(AcpObject):
    id: str
    item_ids: list[str]
    destination_type: FulfillmentType
    fulfillment_details: FulfillmentDetails | UnsetType = UNSET
    location_id: str | UnsetType = UNSET
    instructions: str | UnsetType = UNSET


# --- messages and links -----------------------------------------------------------------------


class MessageInfo(AcpObject, tag_field="type", tag="info"):
    content_type: ContentType
    content: str
    severity: Severity | UnsetType = UNSET
    param: str | UnsetType = UNSET


class MessageWarning(AcpObject, tag_field="type", tag="warning"):
    code: WarningCode
    content_type: ContentType
    content: str
    severity: Severity | UnsetType = UNSET
    param: str | UnsetType = UNSET


class MessageError(AcpObject, tag_field="type", tag="error"):
    code: ErrorMessageCode
    content_type: ContentType
    content: str
    severity: Severity | UnsetType = UNSET
    param: str | UnsetType = UNSET


Message = MessageInfo | MessageWarning | MessageError


class Link(AcpObject):
    type: LinkType
    url: str
    title: str | UnsetType = UNSET


# --- payment and authentication ---------------------------------------------------------------


class Credential(msgspec.Struct, kw_only=True, omit_defaults=True):
    # Open in the schema: a handler may add fields to its credential.
    type: str
    token: str


class Instrument(msgspec.Struct, kw_only=True, omit_defaults=True):
    type: str
    credential: Credential


class PaymentData(AcpObject):
    """How the agent pays on complete: a handler and its instrument (a delegated token), or
    a purchase order. The schema's anyOf (one of the two) is checked by the seller."""

    handler_id: str | UnsetType = UNSET
    instrument: Instrument | UnsetType = UNSET
    billing_address: Address | UnsetType = UNSET
    purchase_order_number: str | UnsetType = UNSET
    payment_terms: Literal["immediate", "net_15", "net_30", "net_60", "net_90"] | UnsetType = UNSET
    due_date: str | UnsetType = UNSET
    approval_required: bool | UnsetType = UNSET


class AuthenticationOutcomeDetails(AcpObject):
    three_ds_cryptogram: str
    electronic_commerce_indicator: Literal["01", "02", "05", "06", "07"]
    transaction_id: str
    version: str


class AuthenticationResult(AcpObject):
    outcome: Literal[
        "abandoned",
        "attempt_acknowledged",
        "authenticated",
        "canceled",
        "denied",
        "informational",
        "internal_error",
        "not_supported",
        "processing_error",
        "rejected",
    ]
    outcome_details: AuthenticationOutcomeDetails | UnsetType = UNSET


AuthenticationMetadata = dict[str, Any]
"""3-D Secure metadata the seller gives on `authentication_required` (channel, acquirer
details, directory server, flow preference): an open object in the schema, kept as JSON."""


class RiskSignals(AcpObject):
    ip_address: str | UnsetType = UNSET
    user_agent: str | UnsetType = UNSET
    accept_language: str | UnsetType = UNSET
    session_id: str | UnsetType = UNSET
    device_fingerprint: str | UnsetType = UNSET


class IntentTrace(msgspec.Struct, kw_only=True, omit_defaults=True):
    reason_code: Literal[
        "price_sensitivity",
        "shipping_cost",
        "shipping_speed",
        "product_fit",
        "trust_security",
        "returns_policy",
        "payment_options",
        "comparison",
        "timing_deferred",
        "other",
    ]
    trace_summary: str | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


# --- orders -----------------------------------------------------------------------------------


class EstimatedDelivery(AcpObject):
    earliest: str
    latest: str


class OrderConfirmation(AcpObject):
    confirmation_number: str | UnsetType = UNSET
    confirmation_email_sent: bool | UnsetType = UNSET
    receipt_url: str | UnsetType = UNSET
    invoice_number: str | UnsetType = UNSET


class SupportInfo(AcpObject):
    email: str | UnsetType = UNSET
    phone: str | UnsetType = UNSET
    hours: str | UnsetType = UNSET
    help_center_url: str | UnsetType = UNSET


class Order(AcpObject):
    id: str
    checkout_session_id: str
    permalink_url: str
    order_number: str | UnsetType = UNSET
    status: OrderStatus | UnsetType = UNSET
    estimated_delivery: EstimatedDelivery | UnsetType = UNSET
    confirmation: OrderConfirmation | UnsetType = UNSET
    support: SupportInfo | UnsetType = UNSET


# --- the session and its requests -------------------------------------------------------------


class CheckoutSession(AcpObject):
    """The authoritative state of a session, as every checkout endpoint answers it
    (`CheckoutSessionBase`; with `order` set it is also a `CheckoutSessionWithOrder`)."""

    id: str
    status: SessionStatus
    currency: str
    line_items: list[LineItem]
    totals: list[Total]
    fulfillment_options: list[FulfillmentOption]
    messages: list[Message]
    links: list[Link]
    capabilities: Capabilities
    protocol: ProtocolVersion | UnsetType = UNSET
    buyer: Buyer | UnsetType = UNSET
    presentment_currency: str | UnsetType = UNSET
    exchange_rate: float | UnsetType = UNSET
    exchange_rate_timestamp: str | UnsetType = UNSET
    locale: str | UnsetType = UNSET
    timezone: str | UnsetType = UNSET
    fulfillment_details: FulfillmentDetails | UnsetType = UNSET
    selected_fulfillment_options: list[SelectedFulfillmentOption] | UnsetType = UNSET
    fulfillment_groups: list[FulfillmentGroup] | UnsetType = UNSET
    authentication_metadata: AuthenticationMetadata | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    updated_at: str | UnsetType = UNSET
    expires_at: str | UnsetType = UNSET
    order: Order | UnsetType = UNSET
    continue_url: str | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    quote_id: str | UnsetType = UNSET
    quote_expires_at: str | UnsetType = UNSET
    discounts: dict[str, Any] | UnsetType = UNSET


class CheckoutSessionCreateRequest(AcpObject):
    line_items: list[Item]
    currency: str
    capabilities: Capabilities
    buyer: Buyer | UnsetType = UNSET
    fulfillment_details: FulfillmentDetails | UnsetType = UNSET
    fulfillment_groups: list[FulfillmentGroup] | UnsetType = UNSET
    affiliate_attribution: dict[str, Any] | UnsetType = UNSET
    coupons: list[str] | UnsetType = UNSET
    discounts: dict[str, Any] | UnsetType = UNSET
    locale: str | UnsetType = UNSET
    timezone: str | UnsetType = UNSET
    quote_id: str | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


class CheckoutSessionUpdateRequest(AcpObject):
    buyer: Buyer | UnsetType = UNSET
    line_items: list[Item] | UnsetType = UNSET
    fulfillment_details: FulfillmentDetails | UnsetType = UNSET
    fulfillment_groups: list[FulfillmentGroup] | UnsetType = UNSET
    selected_fulfillment_options: list[SelectedFulfillmentOption] | UnsetType = UNSET
    coupons: list[str] | UnsetType = UNSET
    discounts: dict[str, Any] | UnsetType = UNSET


class CheckoutSessionCompleteRequest(AcpObject):
    payment_data: PaymentData
    buyer: Buyer | UnsetType = UNSET
    authentication_result: AuthenticationResult | UnsetType = UNSET
    affiliate_attribution: dict[str, Any] | UnsetType = UNSET
    risk_signals: RiskSignals | UnsetType = UNSET


class CancelSessionRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    # Open in the schema (no additionalProperties: false).
    intent_trace: IntentTrace | UnsetType = UNSET


# --- the error object -------------------------------------------------------------------------


class Error(AcpObject):
    """ACP's flat error: what every 4xx and 5xx of the checkout API answers (RFC §3.1).

    `type` keeps the schema's enum, `request_not_idempotent` included, although RFC §6
    (unreleased) drops it in favour of `invalid_request` with idempotency codes, which is
    what a seller built on this package answers."""

    type: ErrorType
    code: str
    message: str
    param: str | UnsetType = UNSET


# --- codecs -----------------------------------------------------------------------------------

ENCODER = msgspec.json.Encoder()
T = TypeVar("T")


def encode(value: msgspec.Struct) -> bytes:
    """The JSON bytes of an ACP object (unset fields left out)."""
    return ENCODER.encode(value)


def decode(data: bytes | str, type_: type[T]) -> T:
    """An ACP object read from JSON bytes; `msgspec.ValidationError` names the bad path."""
    return msgspec.json.decode(data, type=type_)


def to_builtins(value: msgspec.Struct) -> dict[str, Any]:
    """An ACP object as plain JSON values (unset fields left out)."""
    return msgspec.to_builtins(value)
