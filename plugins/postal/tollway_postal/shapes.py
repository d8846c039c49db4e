"""The physical mail tool's input and answer types, shared by the tool, the `mail`
provider and the tracking route. Bounds follow Lob's documented limits for a US address
(name 40 characters, address lines 64, a two-letter state, ZIP or ZIP+4)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

HTML_MAX_BYTES = 100_000  # the letter's HTML, UTF-8
TEXT_MAX_CHARS = 20_000  # about six pages of plain text

Name = Annotated[str, Meta(min_length=1, max_length=40)]
Line1 = Annotated[str, Meta(min_length=1, max_length=64, description="Street address.")]
Line2 = Annotated[str, Meta(max_length=64, description="Apartment, suite or unit.")]
City = Annotated[str, Meta(min_length=1, max_length=200)]
State = Annotated[str, Meta(pattern=r"^[A-Za-z]{2}$", description="Two letters, e.g. CA")]
Zip = Annotated[str, Meta(pattern=r"^\d{5}(-\d{4})?$", description="12345 or 12345-6789")]
Html = Annotated[str, Meta(min_length=1, max_length=HTML_MAX_BYTES, description="The letter as HTML, at most 100 KB.")]
Text = Annotated[str, Meta(min_length=1, max_length=TEXT_MAX_CHARS, description="The letter as plain text.")]
Color = Annotated[bool, Meta(description="Print in color (costs more).")]


class PostalAddress(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A US postal address."""

    name: Name
    line1: Line1
    city: City
    state: State
    zip: Zip
    line2: Line2 | None = None
    country: Literal["US"] = "US"


class PostalLetterInput(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A letter to a US address: `html` or `text`, exactly one."""

    to: PostalAddress
    html: Html | None = None
    text: Text | None = None
    color: Color = False


class PostalVerifiedAddress(msgspec.Struct):
    """What the address verification said, in the USPS's standard form."""

    deliverability: (
        str  # deliverable, deliverable_unnecessary_unit, deliverable_incorrect_unit, deliverable_missing_unit
    )
    primary_line: str | None
    secondary_line: str | None
    last_line: str | None  # city, state, ZIP+4


class PostalLetterSent(msgspec.Struct):
    """The letter the provider accepted for printing and mailing."""

    letter_id: str  # Lob's id, ltr_...
    expected_delivery_date: str | None  # YYYY-MM-DD, as Lob expects it
    color: bool
    address: PostalVerifiedAddress


class PostalTrackingEvent(msgspec.Struct):
    name: (
        str  # Mailed, In Transit, In Local Area, Processed for Delivery, Delivered, Re-Routed, Returned to Sender, ...
    )
    time: str | None
    location: str | None


class PostalLetterTracking(msgspec.Struct):
    """A letter sent by `physical_mail_send`, as the provider reports it now."""

    request_id: str
    letter_id: str
    expected_delivery_date: str | None
    status: str | None  # the provider's rendering status: processed, rendered, failed
    tracking_events: list[PostalTrackingEvent]
