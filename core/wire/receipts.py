"""Receipts as served and signed, their listing, and the published signing keys.

The signed form is `ReceiptBody` exactly (every field present, nulls included;
the revision-only fields when a revision set them);
`Receipt` adds what the signature itself is. Field names are the wire's, so the
canonical JSON of a receipt does not depend on this module's field order."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType


class ReceiptBody(msgspec.Struct, forbid_unknown_fields=True):
    receipt_id: str
    agent_id: str
    soul_agent_id: str | None
    category: str
    subcategory: str | None
    tool: str | None
    request_id: str | None
    amount_usdc: str
    service_fee: str
    payment_method: str
    status: str
    execution_status: str
    goal_id: str | None
    revision: int
    settlement_tx: str | None
    memo: str | None
    decision_context: dict[str, Any] | None = msgspec.field(name="decisionContext")
    value_tag: dict[str, Any] | None
    job_id: str | None
    metadata_digest: str | None
    created_at: str
    settled_at: str | None
    # present only on revisions that say so: why a refund or a settlement failure
    refund_reason: str | UnsetType = UNSET
    settlement_failure: str | None | UnsetType = UNSET
    # the unused part of the charge given back to credits (a goal's unspent budget), and why
    returned_usdc: str | UnsetType = UNSET
    return_reason: str | UnsetType = UNSET


class Receipt(ReceiptBody, forbid_unknown_fields=True, kw_only=True):
    """A served receipt: the signed body plus `key_id`, `alg`, `digest` (SHA-256 hex
    of the RFC 8785 form of everything but digest and signature) and `signature`."""

    key_id: str
    alg: Literal["Ed25519"]
    digest: str
    signature: str


class ReceiptPage(msgspec.Struct):
    receipts: list[Receipt]
    count: int
    has_more: bool


class SigningKeyInfo(msgspec.Struct):
    key_id: str
    alg: Literal["Ed25519"]
    public_key: str  # base64url, the raw 32 bytes
    created_at: str
    active: bool


class ReceiptKeys(msgspec.Struct):
    keys: list[SigningKeyInfo]
