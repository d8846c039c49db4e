"""x402 wire format: PAYMENT-REQUIRED / PAYMENT-RESPONSE encoding, payment header
decoding (v1 and v2, EVM `exact`), and the x402 invalid-reason codes."""
from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from core.payments.networks import Network

X402_VERSION = 2
SCHEME_EXACT = "exact"

# HTTP header names (x402 v2; X-PAYMENT is the v1 client header).
PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED"
PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE"
PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE"
X_PAYMENT_HEADER = "X-PAYMENT"

# Invalid-reason codes. The evm ones are those of the official SDK
# (x402.mechanisms.evm.constants); the generic ones are the x402 spec's.
INVALID_PAYLOAD = "invalid_payload"
INVALID_X402_VERSION = "invalid_x402_version"
ERR_UNSUPPORTED_SCHEME = "unsupported_scheme"
ERR_NETWORK_MISMATCH = "network_mismatch"
ERR_INVALID_SIGNATURE = "invalid_exact_evm_payload_signature"
ERR_RECIPIENT_MISMATCH = "invalid_exact_evm_payload_recipient_mismatch"
ERR_AUTHORIZATION_VALUE_MISMATCH = "invalid_exact_evm_payload_authorization_value_mismatch"
ERR_VALID_BEFORE_EXPIRED = "invalid_exact_evm_payload_authorization_valid_before"
ERR_VALID_AFTER_FUTURE = "invalid_exact_evm_payload_authorization_valid_after"
ERR_NONCE_ALREADY_USED = "invalid_exact_evm_nonce_already_used"
ERR_INSUFFICIENT_BALANCE = "invalid_exact_evm_insufficient_balance"
ERR_TRANSACTION_FAILED = "transaction_failed"
UNEXPECTED_VERIFY_ERROR = "unexpected_verify_error"
UNEXPECTED_SETTLE_ERROR = "unexpected_settle_error"

# A real payment header is ~1 KB; anything far larger is refused before decoding.
MAX_HEADER_CHARS = 16_384

# Legacy (v1) network names and their chain ids.
_V1_NETWORK_CHAIN_IDS = {"base": 8453, "base-sepolia": 84532}

_UINT256_LIMIT = 1 << 256
_ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{40}\Z")
_NONCE_RE = re.compile(r"0x[0-9a-fA-F]{64}\Z")
_HEX_RE = re.compile(r"(?:0x)?((?:[0-9a-fA-F]{2})*)\Z")
_URLSAFE_TO_STD = str.maketrans("-_", "+/")


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


# --------------------------------------------------------------------------- encode


def build_requirements(
    network: Network,
    amount_micro: int,
    pay_to: str,
    quote_id: str,
    max_timeout_seconds: int = 300,
) -> dict[str, Any]:
    """x402 v2 PaymentRequirements (camelCase) for an exact USDC payment."""
    return {
        "scheme": SCHEME_EXACT,
        "network": network.caip2,
        "amount": str(int(amount_micro)),
        "asset": network.asset,
        "payTo": pay_to,
        "maxTimeoutSeconds": int(max_timeout_seconds),
        "extra": {
            "name": network.eip712_name,
            "version": network.eip712_version,
            "quoteId": quote_id,
        },
    }


def _b64json(obj: Any) -> str:
    raw = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.b64encode(raw).decode("ascii")


def encode_payment_required(
    error: str, resource_url: str, description: str, requirements: list[dict[str, Any]]
) -> str:
    """The `PAYMENT-REQUIRED` header value (standard, padded base64 of compact JSON)."""
    return _b64json(
        {
            "x402Version": X402_VERSION,
            "error": error,
            "resource": {
                "url": resource_url,
                "description": description,
                "mimeType": "application/json",
            },
            "accepts": list(requirements),
        }
    )


def encode_payment_response(
    success: bool,
    transaction: str,
    network_caip2: str,
    payer: str,
    error_reason: str | None = None,
) -> str:
    """The `PAYMENT-RESPONSE` header value: a SettleResponse (SDK field names)."""
    body: dict[str, Any] = {"success": bool(success)}
    if error_reason is not None:
        body["errorReason"] = error_reason
    body["payer"] = payer
    body["transaction"] = transaction
    body["network"] = network_caip2
    return _b64json(body)


# --------------------------------------------------------------------------- decode


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
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError
        raise _bad("payment header is not base64 of JSON") from None
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
    if m is None or not m.group(1):
        raise _bad("payload.signature must be a hex string")
    signature = "0x" + m.group(1).lower()

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


def quote_id_from(payload: PaymentPayload) -> str | None:
    """The `extra.quoteId` echoed in a v2 payload's `accepted`, if any."""
    accepted = payload.accepted
    if not accepted:
        return None
    extra = accepted.get("extra")
    if not isinstance(extra, dict):
        return None
    qid = extra.get("quoteId")
    return qid if isinstance(qid, str) and qid else None


def check_scheme_and_network(payload: PaymentPayload, network: Network) -> None:
    """Refuse a payload for another scheme (`unsupported_scheme`) or another chain
    (`network_mismatch`). The network may be CAIP-2, our name, or a v1 legacy name."""
    if payload.scheme != SCHEME_EXACT:
        raise PaymentError(
            ERR_UNSUPPORTED_SCHEME, f"scheme {payload.scheme!r} is not supported; use 'exact'"
        )
    given = payload.network
    if given in (network.caip2, network.name):
        return
    if _V1_NETWORK_CHAIN_IDS.get(given) == network.chain_id:
        return
    raise PaymentError(
        ERR_NETWORK_MISMATCH, f"payment is for network {given!r}; expected {network.caip2}"
    )
