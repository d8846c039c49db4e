"""Offline receipt verification: the signed form is the receipt minus `signature` and `digest`,
canonicalised with RFC 8785; `digest` is its SHA-256 hex and `signature` an Ed25519 signature
(base64url, no padding) over the 32 digest bytes, by the key named `key_id` of those the
service publishes at `GET /v1/receipts/keys`."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._errors import TollwayError


class ReceiptInvalid(TollwayError):
    """A receipt that does not verify: `code` says why (`digest_mismatch`, `bad_signature`, `unknown_key`, …)."""


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _public_keys(keys: Any) -> dict[str, bytes]:
    """key_id -> raw public key, from the `/v1/receipts/keys` answer (or its `keys` list, or a
    mapping of key_id to base64url public key)."""
    if isinstance(keys, dict) and "keys" in keys:
        keys = keys["keys"]
    if isinstance(keys, dict):
        return {k: _b64url(v) for k, v in keys.items()}
    return {k["key_id"]: _b64url(k["public_key"]) for k in keys if k.get("alg", "Ed25519") == "Ed25519"}


def check_receipt(receipt: dict[str, Any], keys: Any) -> None:
    """Raise `ReceiptInvalid` unless `receipt` (as served) is signed by one of `keys`."""
    signed = {k: v for k, v in receipt.items() if k not in ("signature", "digest")}
    if not isinstance(receipt.get("signature"), str) or not isinstance(receipt.get("digest"), str):
        raise ReceiptInvalid("unsigned", "the receipt has no signature or digest")
    try:
        canonical = rfc8785.dumps(signed)
    except Exception as exc:
        raise ReceiptInvalid("not_canonical", f"the receipt cannot be canonicalised: {exc}")
    digest = hashlib.sha256(canonical).hexdigest()
    if digest != receipt["digest"]:
        raise ReceiptInvalid("digest_mismatch", "the receipt's fields do not hash to its digest")
    public = _public_keys(keys).get(str(receipt.get("key_id")))
    if public is None:
        raise ReceiptInvalid("unknown_key", f"no published key {receipt.get('key_id')!r}")
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(_b64url(receipt["signature"]), bytes.fromhex(digest))
    except (InvalidSignature, ValueError):
        raise ReceiptInvalid("bad_signature", "the signature does not verify with the receipt's key")


def verify_receipt(receipt: dict[str, Any], keys: Any) -> bool:
    """True when `receipt` (as served) is signed by one of `keys` (the `/v1/receipts/keys` answer)."""
    try:
        check_receipt(receipt, keys)
    except ReceiptInvalid:
        return False
    return True
