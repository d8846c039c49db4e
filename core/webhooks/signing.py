"""The webhook signature: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.

A webhook enqueued with `signing="acp"` (an ACP merchant's order event) is signed as the
Agentic Commerce Protocol's webhook API says instead: `Merchant-Signature`, an HMAC-SHA256 of
the raw body under the receiver's secret (base64url, no padding, as ACP's request
`Signature`), beside `Timestamp` (RFC 3339) and `Request-Id` (the delivery id)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "X-Service-Signature"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300
ACP_SIGNATURE_HEADER = "Merchant-Signature"
SIGNINGS = ("service", "acp")  # how an outbox row is signed


def new_secret() -> str:
    """A fresh signing secret: `whsec_` and 32 random bytes, URL-safe base64."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def _digest(secret: str, raw_body: bytes, t: int) -> str:
    return hmac.new(secret.encode(), f"{t}.".encode() + raw_body, hashlib.sha256).hexdigest()


def sign(secret: str, raw_body: bytes, t: int) -> str:
    """The header value for `raw_body` sent at unix second `t`."""
    return f"t={t},v1={_digest(secret, raw_body, t)}"


def _parse(header: str) -> tuple[int, list[str]] | None:
    """(t, every v1 value) of a header, None when it has no usable `t`."""
    t: int | None = None
    v1: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            if not value.isdigit():
                return None
            t = int(value)
        elif key == "v1":
            v1.append(value)
    return (t, v1) if t is not None else None


def verify(
    secret: str, raw_body: bytes, header: str, *, now: float | None = None, tolerance_s: int = DEFAULT_TOLERANCE_S
) -> bool:
    """True when `header` signs `raw_body` with `secret` and its `t` is within
    `tolerance_s` of `now` (either side); compares in constant time."""
    parsed = _parse(header or "")
    if parsed is None:
        return False
    t, candidates = parsed
    current = time.time() if now is None else now
    if abs(current - t) > tolerance_s:
        return False
    expected = _digest(secret, raw_body, t)
    return any(hmac.compare_digest(expected, c) for c in candidates)


def acp_signature(secret: str, raw_body: bytes) -> str:
    """ACP's `Merchant-Signature` of a webhook body: base64url HMAC-SHA256 of the raw bytes."""
    digest = hmac.new(secret.encode(), raw_body, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
