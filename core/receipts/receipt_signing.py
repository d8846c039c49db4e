"""Receipt signatures (docs/receipts.md): RFC 8785 canonical JSON (core/basics/canonical.py),
SHA-256 digest, Ed25519 over the 32 digest bytes, base64url without padding.

Pure functions plus the signing key; storage lives in `core.receipts`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from tollway._core.basics.canonical import canonical_bytes
from tollway._core.basics.json_values import JSONValue

ALG = "Ed25519"
UNSIGNED_FIELDS = ("signature", "digest")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def metadata_digest(metadata: Any) -> str:
    """The served stand-in for private metadata: SHA-256 hex of its canonical JSON."""
    return sha256_hex(canonical_bytes(metadata))


def signed_form(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `receipt` without its digest and signature (a new receipt has neither: a
    plain copy, in C)."""
    if "signature" not in receipt and "digest" not in receipt:
        return dict(receipt)
    return {k: v for k, v in receipt.items() if k not in UNSIGNED_FIELDS}


class ReceiptSigner:
    """Holds one Ed25519 key; `sign` fills key_id, alg, digest and signature."""

    def __init__(self, seed: bytes) -> None:
        if len(seed) != 32:
            raise ValueError("the receipt signing seed must be 32 bytes")
        self._key = SigningKey(seed)
        self.public_key: bytes = bytes(self._key.verify_key)
        self.key_id = "rk_" + hashlib.sha256(self.public_key).hexdigest()[:16]

    @property
    def public_key_b64url(self) -> str:
        return b64url(self.public_key)

    def sign(self, receipt: Mapping[str, Any]) -> dict[str, Any]:
        """A new dict: `receipt`'s signed fields, then key_id, alg, digest and signature."""
        body = signed_form(receipt)
        body["key_id"] = self.key_id
        body["alg"] = ALG
        digest = hashlib.sha256(canonical_bytes(body)).digest()
        signature = self._key.sign(digest).signature
        body["digest"] = digest.hex()  # after the digest of the rest: the body is ours, no copy needed
        body["signature"] = b64url(signature)
        return body


def verify_receipt(receipt: Mapping[str, JSONValue], public_keys: Mapping[str, bytes]) -> tuple[bool, str]:
    """Check a served receipt offline. Returns (valid, reason)."""
    try:
        key_id = receipt["key_id"]
        if receipt.get("alg") != ALG:
            return False, f"unsupported alg {receipt.get('alg')!r}"
        public = public_keys.get(key_id)
        if public is None:
            return False, f"unknown key_id {key_id!r}"
        digest = hashlib.sha256(canonical_bytes(signed_form(receipt))).digest()
        if digest.hex() != receipt.get("digest"):
            return False, "digest does not match the receipt's contents"
        VerifyKey(public).verify(digest, b64url_decode(receipt["signature"]))
    except BadSignatureError:
        return False, "signature does not verify"
    except (KeyError, TypeError, ValueError) as exc:
        return False, f"malformed receipt: {exc}"
    return True, "valid"
