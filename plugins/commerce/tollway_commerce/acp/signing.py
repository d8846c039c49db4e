"""Request signing and body fingerprints as ACP asks for them, shared by both sides.

- `Signature` (RFC §2.1, §7): the 2026-01-30 release leaves the algorithm to be published
  out of band. Tollway's: base64url (no padding) of HMAC-SHA256 under the key the operator
  registered for the platform, over `<Timestamp>.<canonical JSON of the body>` — RFC 8785
  canonical JSON, empty for a request without a body — so a body re-serialised by a proxy
  still verifies and a signature cannot be replayed with another `Timestamp`.
- `Merchant-Signature` of an order webhook: base64url HMAC-SHA256 of the raw body.
- `fingerprint(body)`: RFC §6.2's request equivalence, SHA-256 of the body's RFC 8785 form
  (key order and `1.0` against `1` do not matter; `null` against absent and array order do).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime

import msgspec
import rfc8785


def canonical(body: bytes) -> bytes:
    """RFC 8785 canonical JSON of a body (b"" for an empty one). Raises ValueError when the
    body is not JSON."""
    if not body.strip():
        return b""
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise ValueError("the body is not JSON") from exc
    return rfc8785.dumps(value)


def fingerprint(body: bytes) -> str:
    """SHA-256 hex of the body's canonical JSON (of its bytes when it is not JSON)."""
    try:
        return hashlib.sha256(canonical(body)).hexdigest()
    except (ValueError, rfc8785.CanonicalizationError):
        return hashlib.sha256(b"raw:" + body).hexdigest()


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def request_signature(key: str, timestamp: str, body: bytes) -> str:
    """The `Signature` header of a request sent at `timestamp` (RFC 3339) with `body`."""
    return _b64(hmac.new(key.encode(), timestamp.encode() + b"." + canonical(body), hashlib.sha256).digest())


def timestamp(now: datetime | None = None) -> str:
    """`Timestamp` for a request sent now: RFC 3339, UTC, whole seconds."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def verify_request(key: str, signature: str, sent: str, body: bytes, *, tolerance_s: int, now: float) -> str | None:
    """None when `signature` signs `body` at `sent` under `key` and `sent` is within
    `tolerance_s` of `now` (unix seconds); else why not."""
    try:
        when = datetime.fromisoformat(sent.replace("Z", "+00:00"))
    except ValueError:
        return "Timestamp is not an RFC 3339 date-time"
    if when.tzinfo is None:
        return "Timestamp has no time zone"
    if abs(now - when.timestamp()) > tolerance_s:
        return f"Timestamp is more than {tolerance_s} s from now"
    try:
        expected = request_signature(key, sent, body)
    except (ValueError, rfc8785.CanonicalizationError):
        return "the body is not JSON"
    if not hmac.compare_digest(expected.encode(), signature.strip().encode()):
        return "Signature does not match the body and Timestamp"
    return None


def webhook_signature(secret: str, raw_body: bytes) -> str:
    """`Merchant-Signature` of an order event: base64url HMAC-SHA256 of the raw body."""
    return _b64(hmac.new(secret.encode(), raw_body, hashlib.sha256).digest())


def verify_webhook(secret: str, raw_body: bytes, header: str) -> bool:
    return hmac.compare_digest(webhook_signature(secret, raw_body).encode(), (header or "").strip().encode())
