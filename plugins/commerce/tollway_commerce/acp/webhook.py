"""The order events a merchant POSTs to the agent platform (`openapi.agentic_checkout_webhook.yaml`).

The body is signed with an HMAC over its raw bytes in the `Merchant-Signature` header,
with a `Timestamp` (RFC 3339) and an optional `Request-Id`.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from .checkout import AcpObject

OrderEventStatus = Literal["created", "manual_review", "confirmed", "canceled", "shipped", "fulfilled"]


class Refund(AcpObject):
    type: Literal["store_credit", "original_payment"]
    amount: int


class EventDataOrder(AcpObject, tag_field="type", tag="order"):
    checkout_session_id: str
    permalink_url: str
    status: OrderEventStatus
    refunds: list[Refund]


class WebhookEvent(AcpObject):
    type: Literal["order_create", "order_update"]
    data: EventDataOrder


class WebhookAck(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The receiver's 200 answer."""

    received: bool
    request_id: str | UnsetType = UNSET


SIGNATURE_HEADER = "Merchant-Signature"
