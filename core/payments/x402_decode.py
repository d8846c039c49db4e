"""Decoding an x402 payment (v1 and v2, EVM `exact`): from the base64 JSON header
or from the JSON object itself, into a checked `PaymentPayload`."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

import msgspec

# Generic invalid-reason codes of the x402 protocol (the evm ones are in core/payments/x402.py).
INVALID_PAYLOAD = "invalid_payload"
INVALID_X402_VERSION = "invalid_x402_version"

# A real payment header is ~1 KB; anything far larger is refused before decoding.
MAX_HEADER_CHARS = 16_384

_UINT256_LIMIT = 1 << 256
_ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{40}\Z")
_NONCE_RE = re.compile(r"0x[0-9a-fA-F]{64}\Z")
# hex digits after an optional 0x: the signature's, of an even count (checked apart: a
# repeated pair of digits costs the regex engine ten times the plain run)
_HEX_RE = re.compile(r"(?:0x)?([0-9a-fA-F]*)\Z")
_URLSAFE_TO_STD = str.maketrans("-_", "+/")
_decode_json = msgspec.json.Decoder().decode


class PaymentError(Exception):
    """A payment refused for an x402 invalid-reason code (`reason`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class Authorization:
    """An EIP-3009 TransferWithAuthorization as signed by the payer."""

    from_: str
    to: str
    value: int
    valid_after: int
    valid_before: int
    nonce: str  # 0x + 64 lower-case hex

    def to_wire(self) -> dict[str, str]:
        """The authorization as the official client sends it (all strings)."""
        return {
            "from": self.from_,
            "to": self.to,
            "value": str(self.value),
            "validAfter": str(self.valid_after),
            "validBefore": str(self.valid_before),
            "nonce": self.nonce,
        }


@dataclass(slots=True)
class PaymentPayload:
    version: int  # 1 or 2
    accepted: dict[str, Any] | None  # v2: the requirements the client chose, echoed
    scheme: str
    network: str  # as given: CAIP-2 in v2, usually a legacy name in v1
    signature: str  # 0x + lower-case hex
    authorization: Authorization
    raw: dict[str, Any]


def _bad(message: str, reason: str = INVALID_PAYLOAD) -> PaymentError:
    return PaymentError(reason, message)


def _b64decode(value: str) -> bytes:
    s = value.strip()
    if not s:
        raise _bad("empty payment header")
    if len(s) > MAX_HEADER_CHARS:
        raise _bad("payment header too large")
    if "-" in s or "_" in s:
        s = s.translate(_URLSAFE_TO_STD)
    s = s.rstrip("=")
    if len(s) % 4 == 1:
        raise _bad("payment header is not valid base64")
    s += "=" * (-len(s) % 4)
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise _bad("payment header is not valid base64") from None


def _uint(obj: dict[str, Any], key: str, where: str) -> int:
    if key not in obj:
        raise _bad(f"{where}.{key} is missing")
    v = obj[key]
    if isinstance(v, bool):
        raise _bad(f"{where}.{key} must be an unsigned integer")
    if isinstance(v, int):
        n = v
    elif isinstance(v, str) and 0 < len(v) <= 78 and v.isascii() and v.isdigit():
        n = int(v)
    else:
        raise _bad(f"{where}.{key} must be an unsigned integer")
    if not 0 <= n < _UINT256_LIMIT:
        raise _bad(f"{where}.{key} is out of the uint256 range")
    return n


def _str_field(obj: dict[str, Any], key: str, where: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v:
        raise _bad(f"{where}.{key} is missing or not a string")
    return v


def _address(obj: dict[str, Any], key: str, where: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not _ADDRESS_RE.match(v):
        raise _bad(f"{where}.{key} must be a 0x-prefixed 20-byte hex address")
    return v


def _dict_field(obj: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    v = obj.get(key)
    if not isinstance(v, dict):
        raise _bad(f"{where}.{key} is missing or not an object")
    return v


def _version(data: dict[str, Any]) -> int:
    v = data.get("x402Version")
    if isinstance(v, str) and v.isascii() and v.isdigit():
        v = int(v)
    if v is None:
        raise _bad("x402Version is missing")
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad("x402Version must be an integer")
    if v not in (1, 2):
        raise _bad(f"x402Version {v} is not supported", INVALID_X402_VERSION)
    return v


def decode_payment_header(value: str) -> PaymentPayload:
    """Decode an x402 v1/v2 EVM `exact` payment header (base64 JSON, standard or
    url-safe alphabet, padding optional). Raises PaymentError on any malformation."""
    if not isinstance(value, str):
        raise _bad("payment header must be a string")
    raw = _b64decode(value)
    try:
        data = _decode_json(raw)
    except (msgspec.DecodeError, RecursionError):  # not UTF-8, not JSON (strictly: no NaN, no lone surrogate), too deep
        raise _bad("payment header is not base64 of JSON") from None
    return decode_payment(data)


def decode_payment(data: Any) -> PaymentPayload:
    """Check and read a decoded payment object (what the header carries, or what an
    MCP client sends in `_meta["x402/payment"]`). Raises PaymentError on any malformation."""
    if not isinstance(data, dict):
        raise _bad("payment payload must be a JSON object")

    version = _version(data)
    accepted: dict[str, Any] | None
    if version == 2:
        accepted = _dict_field(data, "accepted", "payload")
        scheme = _str_field(accepted, "scheme", "accepted")
        network = _str_field(accepted, "network", "accepted")
    else:
        accepted = None
        scheme = _str_field(data, "scheme", "payload")
        network = _str_field(data, "network", "payload")

    inner = _dict_field(data, "payload", "payload")
    if "authorization" not in inner and "permit2Authorization" in inner:
        raise _bad("Permit2 payloads are not accepted; sign an EIP-3009 authorization")
    auth = _dict_field(inner, "authorization", "payload")

    sig = inner.get("signature")
    m = _HEX_RE.match(sig) if isinstance(sig, str) else None
    digits = m.group(1) if m is not None else ""
    if not digits or len(digits) % 2:
        raise _bad("payload.signature must be a hex string")
    signature = "0x" + digits.lower()

    nonce = auth.get("nonce")
    if not isinstance(nonce, str) or not _NONCE_RE.match(nonce):
        raise _bad("authorization.nonce must be 0x + 32 bytes of hex")

    authorization = Authorization(
        from_=_address(auth, "from", "authorization"),
        to=_address(auth, "to", "authorization"),
        value=_uint(auth, "value", "authorization"),
        valid_after=_uint(auth, "validAfter", "authorization"),
        valid_before=_uint(auth, "validBefore", "authorization"),
        nonce=nonce.lower(),
    )
    return PaymentPayload(
        version=version,
        accepted=accepted,
        scheme=scheme,
        network=network,
        signature=signature,
        authorization=authorization,
        raw=data,
    )
