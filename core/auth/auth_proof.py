"""Verify (and, for clients, build) the `X-Agent-Proof` header: an EIP-712 `AgentProof`.

Pure and framework-free; it never stores nonces (the caller makes write nonces single-use).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from eth_account import Account

from tollway._core.auth.proof_message import (
    _HEX,
    AGENT_PROOF_TYPES,
    DOMAIN_NAME,
    DOMAIN_VERSION,
    ProofError,
    _malformed,
    _Message,
    agent_proof_digest,
    domain_data,
)
from tollway._core.basics.json_depth import json_too_deep

__all__ = [
    "AGENT_PROOF_TYPES",
    "CLOCK_SKEW",
    "MAX_LIFETIME",
    "ProofError",
    "VerifiedProof",
    "agent_proof_digest",
    "domain_data",
    "make_agent_proof",
    "verify_agent_proof",
]

MAX_LIFETIME = 300  # seconds between issuedAt and expiresAt
CLOCK_SKEW = 30  # seconds of tolerance on both ends
MAX_HEADER_LENGTH = 4096  # a real proof is ~600 characters
PROOF_MAX_DEPTH = 4  # {"message": {...}, "signature": ..., "domain"?: {...}} is 2 deep

_SCOPES = ("read", "write")
_SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HALF_N = _SECP256K1_N // 2


@dataclass(frozen=True)
class VerifiedProof:
    agent: str  # checksummed address that signed
    scope: str  # "read" or "write"
    nonce: str  # 0x + 64 lower-case hex; the caller enforces single use for writes
    expires_at: int  # unix seconds; a nonce record may be dropped after expires_at + CLOCK_SKEW


def _b64decode(value: str) -> bytes:
    # base64url is the contract; standard base64 and padding are tolerated.
    s = value.strip().rstrip("=").replace("-", "+").replace("_", "/")
    if len(s) % 4 == 1:
        raise binascii.Error("impossible base64 length")
    return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)


def _decode_header(header_value: str) -> tuple[dict[str, Any], Any]:
    if not isinstance(header_value, str) or not header_value.strip():
        raise _malformed("X-Agent-Proof is empty")
    if len(header_value) > MAX_HEADER_LENGTH:
        raise _malformed(f"X-Agent-Proof is longer than {MAX_HEADER_LENGTH} characters")
    try:
        raw = _b64decode(header_value)
    except (binascii.Error, ValueError):
        raise _malformed("X-Agent-Proof is not base64url-encoded JSON") from None
    if json_too_deep(raw, PROOF_MAX_DEPTH):
        raise _malformed(f"X-Agent-Proof nests deeper than {PROOF_MAX_DEPTH} levels")
    try:
        envelope = json.loads(raw)
    except ValueError:  # JSON and UTF-8 errors
        raise _malformed("X-Agent-Proof is not base64url-encoded JSON") from None
    if not isinstance(envelope, dict) or "message" not in envelope or "signature" not in envelope:
        raise _malformed('X-Agent-Proof must decode to {"message": {...}, "signature": "0x..."}')
    return envelope, envelope["message"]


def _check_domain(envelope: Mapping[str, Any], chain_id: int) -> None:
    # The contract's envelope has no domain; a client that sends one anyway
    # (e.g. a whole eth_signTypedData_v4 payload) gets a precise answer.
    domain = envelope.get("domain")
    if domain is None:
        return
    if not isinstance(domain, Mapping):
        raise _malformed("domain must be a JSON object")
    if not domain.keys() <= {"name", "version", "chainId"}:
        raise _malformed("the Tollway domain has only name, version and chainId")
    if domain.get("name", DOMAIN_NAME) != DOMAIN_NAME or domain.get("version", DOMAIN_VERSION) != DOMAIN_VERSION:
        raise _malformed(f'domain must be {{name: "{DOMAIN_NAME}", version: "{DOMAIN_VERSION}", chainId}}')
    if "chainId" in domain:
        claimed = domain["chainId"]
        if isinstance(claimed, str):
            try:
                claimed = int(claimed, 0)
            except ValueError:
                raise _malformed("domain.chainId is not a number") from None
        if claimed != chain_id:
            raise ProofError("chain_mismatch", f"proof signed for chain {claimed}, this service is on chain {chain_id}")


def _signature_vrs(value: Any) -> bytes:
    """0x-hex r||s||v (65 bytes, v in 0/1/27/28, low s) -> the same bytes with v as 27/28."""
    if not isinstance(value, str):
        raise _malformed("signature must be a 0x-hex string")
    hex_part = value[2:] if value[:2] in ("0x", "0X") else value
    if len(hex_part) != 130 or not _HEX.issuperset(hex_part):
        raise ProofError("bad_signature", "signature must be 65 bytes (0x + 130 hex digits)")
    raw = bytes.fromhex(hex_part)
    v = raw[64]
    if v >= 27:
        v -= 27
    if v not in (0, 1):
        raise ProofError("bad_signature", "signature v must be 0, 1, 27 or 28")
    r = int.from_bytes(raw[:32], "big")
    s = int.from_bytes(raw[32:64], "big")
    if not 0 < r < _SECP256K1_N or not 0 < s < _SECP256K1_N:
        raise ProofError("bad_signature", "signature r or s out of range")
    if s > _HALF_N:
        # A high-s twin is a second valid signature for the same message (malleability).
        raise ProofError("bad_signature", "signature s must be in the lower half of the curve order")
    return raw[:64] + bytes((v + 27,))


def verify_agent_proof(
    header_value: str,
    *,
    agent_id_header: str,
    chain_id: int,
    method: str,
    path: str,
    body: bytes,
    now: int,
    required_scope: str | None,
) -> VerifiedProof:
    """Check an `X-Agent-Proof` header against the request; raise ProofError if it fails.

    `agent_id_header` is the caller's wallet address (resolve an agent UUID to
    its wallet before calling). A write proof satisfies a read requirement.
    Cheap checks run before the signature recovery.
    """
    if required_scope not in (None, *_SCOPES):
        raise ValueError(f"required_scope must be None, 'read' or 'write', not {required_scope!r}")

    envelope, raw_message = _decode_header(header_value)
    msg = _Message(raw_message)
    _check_domain(envelope, chain_id)
    signature = _signature_vrs(envelope["signature"])

    claimed_agent = "0x" + msg.agent.hex()
    if claimed_agent != agent_id_header.strip().lower():
        raise ProofError("agent_mismatch", "proof agent does not match X-Agent-ID")
    if msg.scope not in _SCOPES:
        raise _malformed("scope must be 'read' or 'write'")
    if required_scope == "write" and msg.scope != "write":
        raise ProofError("scope_mismatch", "this request needs a proof with scope 'write'")
    if msg.method != method.upper():
        raise ProofError("method_mismatch", f"proof is for method {msg.method!r}, request is {method.upper()!r}")
    request_path = path.split("?", 1)[0]
    if msg.path != request_path:
        raise ProofError("path_mismatch", f"proof is for path {msg.path!r}, request is {request_path!r}")
    if msg.body_hash != hashlib.sha256(body).digest():
        raise ProofError("body_mismatch", "bodyHash is not the SHA-256 of the request body")
    if msg.expires_at < msg.issued_at:
        raise _malformed("expiresAt is before issuedAt")
    if msg.expires_at - msg.issued_at > MAX_LIFETIME:
        raise ProofError("lifetime_too_long", f"a proof may live at most {MAX_LIFETIME} seconds")
    if msg.issued_at > now + CLOCK_SKEW:
        raise ProofError("not_yet_valid", "issuedAt is in the future")
    if msg.expires_at < now - CLOCK_SKEW:
        raise ProofError("expired", "the proof has expired")

    try:
        signer = Account._recover_hash(msg.digest(chain_id), signature=signature)
    except Exception:  # eth-keys raises BadSignature/ValidationError for unrecoverable points
        raise ProofError("bad_signature", "the signature cannot be recovered") from None
    if signer.lower() != claimed_agent:
        raise ProofError(
            "bad_signature",
            f"the signature is not by {claimed_agent} over this message on chain {chain_id}",
        )
    return VerifiedProof(agent=signer, scope=msg.scope, nonce="0x" + msg.nonce.hex(), expires_at=msg.expires_at)


def make_agent_proof(
    account: Any,
    *,
    chain_id: int,
    scope: str,
    method: str,
    path: str,
    body: bytes,
    now: int,
    lifetime: int = 120,
    nonce: str | None = None,
) -> str:
    """Client side: sign an AgentProof with an eth-account `LocalAccount`; returns the header value.

    Values are signed as given (tests use this to build proofs that must be refused).
    """
    message = {
        "agent": account.address,
        "scope": scope,
        "method": method.upper(),
        "path": path.split("?", 1)[0],
        "bodyHash": "0x" + hashlib.sha256(body).hexdigest(),
        "issuedAt": now,
        "expiresAt": now + lifetime,
        "nonce": nonce if nonce is not None else "0x" + secrets.token_hex(32),
    }
    signed = Account.sign_typed_data(
        account.key,
        domain_data=domain_data(chain_id),
        message_types=AGENT_PROOF_TYPES,
        message_data=message,
    )
    envelope = {"message": message, "signature": signed.signature.to_0x_hex()}
    raw = json.dumps(envelope, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
