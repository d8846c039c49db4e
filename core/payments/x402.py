"""x402 wire format: the PaymentRequired and SettleResponse objects and their
PAYMENT-REQUIRED / PAYMENT-RESPONSE header form, the x402 invalid-reason codes, and
(from core/payments/x402_decode.py) payment decoding."""

from __future__ import annotations

import base64
import json
from typing import Any

import msgspec

from tollway._core.payments.networks import Network
from tollway._core.payments.x402_decode import (  # noqa: F401  (part of this module's API)
    INVALID_PAYLOAD,
    INVALID_X402_VERSION,
    MAX_HEADER_CHARS,
    Authorization,
    PaymentError,
    PaymentPayload,
    decode_payment,
    decode_payment_header,
)

X402_VERSION = 2
SCHEME_EXACT = "exact"

# HTTP header names (x402 v2; X-PAYMENT is the v1 client header).
PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED"
PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE"
PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE"
X_PAYMENT_HEADER = "X-PAYMENT"

# Invalid-reason codes. The evm ones are those of the official SDK
# (x402.mechanisms.evm.constants); the generic ones (x402_decode) are the x402 spec's.
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


_encode_json = msgspec.json.Encoder().encode

# Legacy (v1) network names and their chain ids.
_V1_NETWORK_CHAIN_IDS = {"base": 8453, "base-sepolia": 84532}

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
    # msgspec writes the bytes json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    # does, UTF-8 encoded, in a tenth of the time.
    return base64.b64encode(_encode_json(obj)).decode("ascii")


def encode_header(obj: Any) -> str:
    """An x402 object (PaymentRequired, SettleResponse) as its header value:
    standard, padded base64 of compact JSON."""
    return _b64json(obj)


def decode_header(value: str) -> Any:
    """The x402 object of a header value written by `encode_header`."""
    return json.loads(base64.b64decode(value))


def build_payment_required(
    error: str, resource_url: str, description: str, requirements: list[dict[str, Any]]
) -> dict[str, Any]:
    """The x402 v2 PaymentRequired object of a quote (the `PAYMENT-REQUIRED` header over HTTP)."""
    return {
        "x402Version": X402_VERSION,
        "error": error,
        "resource": {
            "url": resource_url,
            "description": description,
            "mimeType": "application/json",
        },
        "accepts": list(requirements),
    }


def encode_payment_required(error: str, resource_url: str, description: str, requirements: list[dict[str, Any]]) -> str:
    """The `PAYMENT-REQUIRED` header value (standard, padded base64 of compact JSON)."""
    return encode_header(build_payment_required(error, resource_url, description, requirements))


def build_settle_response(
    success: bool,
    transaction: str,
    network_caip2: str,
    payer: str,
    error_reason: str | None = None,
) -> dict[str, Any]:
    """The x402 SettleResponse object of a payment (SDK field names; the `PAYMENT-RESPONSE` header over HTTP)."""
    body: dict[str, Any] = {"success": bool(success)}
    if error_reason is not None:
        body["errorReason"] = error_reason
    body["payer"] = payer
    body["transaction"] = transaction
    body["network"] = network_caip2
    return body


def encode_payment_response(
    success: bool,
    transaction: str,
    network_caip2: str,
    payer: str,
    error_reason: str | None = None,
) -> str:
    """The `PAYMENT-RESPONSE` header value: a SettleResponse (SDK field names)."""
    return encode_header(build_settle_response(success, transaction, network_caip2, payer, error_reason))


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
        raise PaymentError(ERR_UNSUPPORTED_SCHEME, f"scheme {payload.scheme!r} is not supported; use 'exact'")
    given = payload.network
    if given in (network.caip2, network.name):
        return
    if _V1_NETWORK_CHAIN_IDS.get(given) == network.chain_id:
        return
    raise PaymentError(ERR_NETWORK_MISMATCH, f"payment is for network {given!r}; expected {network.caip2}")
