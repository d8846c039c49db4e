"""Refusal bodies: the error body every refusal carries and the 402 quote."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class FieldProblem(msgspec.Struct):
    """One failing field of a validation error: a dotted/indexed path and why."""

    field: str
    message: str


class ErrorBody(msgspec.Struct):
    """`{error, message, details?}`. Some refusals add fields of their own beside
    these (a tool's `code`, `count`, `sources`...), so other fields may appear."""

    error: str
    message: str
    details: Any | UnsetType = UNSET
    retry_after: int | UnsetType = UNSET  # 429 and 409: seconds to wait
    request_id: str | UnsetType = UNSET  # a paid call that failed after payment
    receipt_id: str | UnsetType = UNSET


class QuoteTerms(msgspec.Struct):
    """What a 402 quote says beside `error` and `message`."""

    code: int
    quote_id: str
    amount_usdc: str
    pay_to: str
    network: str
    expires_at: str


class PaymentRequiredBody(QuoteTerms):
    """The 402 answer: `payment_required` (no payment yet) or
    `payment_verification_failed` (`details.reason` says why), with a fresh quote."""

    error: str
    message: str
    details: Any | UnsetType = UNSET
