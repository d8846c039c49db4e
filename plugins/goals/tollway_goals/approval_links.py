"""Signed, single-use, expiring approval links: the token, its check and the refusal reasons."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import rfc8785

__all__ = [
    "Refusal",
    "TokenParts",
    "Verdict",
    "check_token",
    "make_token",
    "parse_token",
    "read_token",
    "shown_hash",
]

MAX_TOKEN_CHARS = 128
_DOMAIN = b"tollway-approval-link/v1"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_EXPIRES = r"0|[1-9][0-9]{0,11}"
_MAC = r"[A-Za-z0-9_-]{43}"
_TOKEN = re.compile(rf"({_UUID})\.({_EXPIRES})\.({_MAC})")
_ASK_ID = re.compile(_UUID)
_HASH = re.compile(r"[0-9a-f]{64}")


class Refusal(StrEnum):
    """Why a link is not honoured; `status` is the HTTP status of the page that says so."""

    ALTERED = "altered"
    EXPIRED = "expired"
    USED = "used"
    UNKNOWN = "unknown"

    @property
    def status(self) -> int:
        return _STATUS[self]


_STATUS = {Refusal.ALTERED: 403, Refusal.EXPIRED: 410, Refusal.USED: 410, Refusal.UNKNOWN: 404}


class Verdict(StrEnum):
    """What the token alone says, once its ask's stored `shown_hash` is known."""

    OK = "ok"
    ALTERED = "altered"
    EXPIRED = "expired"

    @property
    def refusal(self) -> Refusal | None:
        return None if self is Verdict.OK else Refusal(self.value)


@dataclass(frozen=True, slots=True)
class TokenParts:
    """A well-formed token, not yet checked: its ask, its expiry and its MAC."""

    ask_id: str
    expires_at_s: int
    mac: bytes


def shown_hash(shown: object) -> str:
    """SHA-256 (hex) of the RFC 8785 canonical JSON of what the person is shown."""
    return hashlib.sha256(rfc8785.dumps(shown)).hexdigest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _mac(secret: bytes, ask_id: str, shown_hash: str, expires_at_s: int) -> bytes:
    message = b"\n".join([_DOMAIN, ask_id.encode(), shown_hash.encode(), str(expires_at_s).encode()])
    return hmac.new(secret, message, hashlib.sha256).digest()


def make_token(secret: bytes, ask_id: str, shown_hash: str, expires_at_s: int) -> str:
    """The link token `<ask_id>.<expires_at_s>.<mac>`.

    `ask_id` is a lower-case UUID string, `expires_at_s` Unix seconds in decimal and
    `mac` the unpadded base64url of HMAC-SHA256(secret, "tollway-approval-link/v1\\n"
    ask_id "\\n" shown_hash "\\n" expires_at_s). The hash of what is shown is not in
    the token: the server keeps it with the ask, and the MAC binds the link to it.
    Every part is written in exactly one way, so a changed character never parses to
    the same values.
    """
    if not _ASK_ID.fullmatch(ask_id):
        raise ValueError("ask_id must be a lower-case UUID string")
    if not _HASH.fullmatch(shown_hash):
        raise ValueError("shown_hash must be 64 lower-case hex digits")
    if not re.fullmatch(_EXPIRES, str(expires_at_s)):
        raise ValueError("expires_at_s must be a non-negative integer of at most 12 digits")
    mac = _mac(secret, ask_id, shown_hash, expires_at_s)
    return f"{ask_id}.{expires_at_s}.{_b64(mac)}"


def parse_token(token: object) -> TokenParts | None:
    """The parts of a well-formed token, or None for anything else (never raises)."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        return None
    match = _TOKEN.fullmatch(token)
    if match is None:
        return None
    ask_id, expires, mac_text = match.groups()
    mac = base64.urlsafe_b64decode(mac_text + "=")
    if _b64(mac) != mac_text:
        return None
    return TokenParts(ask_id=ask_id, expires_at_s=int(expires), mac=mac)


def check_token(secret: bytes, parts: TokenParts, shown_hash: str, now_s: float) -> Verdict:
    """OK, ALTERED (the MAC does not match this ask, expiry and shown hash) or EXPIRED
    (`now_s` is at or past the expiry). The MAC is checked first: an altered link is
    ALTERED whatever its expiry says."""
    expected = _mac(secret, parts.ask_id, shown_hash, parts.expires_at_s)
    if not hmac.compare_digest(expected, parts.mac):
        return Verdict.ALTERED
    if now_s >= parts.expires_at_s:
        return Verdict.EXPIRED
    return Verdict.OK


def read_token(
    secret: bytes,
    token: object,
    *,
    shown_hash_of: Callable[[str], str | None],
    now_s: float,
    is_used: Callable[[str], bool] = lambda _ask_id: False,
) -> TokenParts | Refusal:
    """The whole check of a link, in the order a page should answer it.

    Malformed: ALTERED (403). Well formed but `shown_hash_of(ask_id)` is None (no such
    ask): UNKNOWN (404). Bad MAC: ALTERED (403). `is_used(ask_id)`: USED (410), even past
    the expiry. Past the expiry: EXPIRED (410). Otherwise the parts. Recording the use
    stays the caller's job, atomically (one row update guarded by "not used yet").
    """
    parts = parse_token(token)
    if parts is None:
        return Refusal.ALTERED
    stored = shown_hash_of(parts.ask_id)
    if stored is None:
        return Refusal.UNKNOWN
    verdict = check_token(secret, parts, stored, now_s)
    if verdict is Verdict.ALTERED:
        return Refusal.ALTERED
    if is_used(parts.ask_id):
        return Refusal.USED
    return verdict.refusal or parts
