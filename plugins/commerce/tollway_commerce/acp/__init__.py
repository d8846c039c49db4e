"""ACP 2026-01-30 on the wire: msgspec models of the checkout API, its order webhooks and
product feeds, shared by the seller side (Tollway as a merchant) and the buyer side
(Tollway's agents buying from merchants).

    from tollway_commerce import acp
    session = acp.decode(body, acp.CheckoutSession)
"""

from . import errors, signing
from .checkout import *  # noqa: F403
from .checkout import API_VERSION, SUPPORTED_VERSIONS, decode, encode, to_builtins
from .errors import AcpError, error_body
from .feed import Availability, Description, FeedMetadata, FeedProducts, Media, Price, Product, Variant
from .webhook import SIGNATURE_HEADER, EventDataOrder, Refund, WebhookAck, WebhookEvent

__all__ = [  # noqa: F405 - the checkout types are re-exported by name below
    "API_VERSION",
    "SUPPORTED_VERSIONS",
    "AcpError",
    "Availability",
    "Description",
    "EventDataOrder",
    "FeedMetadata",
    "FeedProducts",
    "Media",
    "Price",
    "Product",
    "Refund",
    "SIGNATURE_HEADER",
    "Variant",
    "WebhookAck",
    "WebhookEvent",
    "decode",
    "errors",
    "signing",
    "encode",
    "error_body",
    "to_builtins",
]
