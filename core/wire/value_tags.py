"""Value tags and return on spend: the tagging body, the tag a receipt carries and the
return-on-spend answer (docs/receipts.md, "Value tags and return on spend")."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

ValueStatus = Literal["proposed", "confirmed", "rejected"]
# 0 to 1,000,000 USDC with at most 6 decimals, written as a decimal string.
VALUE_PATTERN = r"^(?:[0-9]{1,6}(?:\.[0-9]{1,6})?|1000000(?:\.0{1,6})?)$"
JobId = Annotated[str, Meta(min_length=1, max_length=100)]  # a paid call's request_id (a receipt's job_id)


class ValueTagRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Tag the newest receipt of one of your calls with the value it brought."""

    request_id: JobId | None = None
    job_id: JobId | None = None
    status: ValueStatus
    value_usdc: Annotated[
        str,
        Meta(pattern=VALUE_PATTERN, max_length=14, description="USDC, 0 to 1000000, up to 6 decimals."),
    ]
    note: Annotated[str, Meta(max_length=1000)] | None = None


class ValueTag(msgspec.Struct):
    """The `value_tag` of a receipt: counted as return only when `confirmed`."""

    status: ValueStatus
    value_usdc: str
    note: str | None
    tagged_at: str


class ReturnOnSpend(msgspec.Struct):
    period_days: int
    category: str | None
    spend_usdc: str  # charged receipts of the period, less what they gave back
    value_usdc: str  # confirmed value tags of those receipts
    proposed_value_usdc: str  # proposed (not yet confirmed) value tags of those receipts
    return_on_spend: float | None  # value / spend, 4 decimals; null when nothing was spent
    receipts_charged: int
    receipts_confirmed: int
