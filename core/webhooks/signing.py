"""The webhook signature: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "X-Service-Signature"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300


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
