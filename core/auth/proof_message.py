"""The EIP-712 `AgentProof` message: its type, domain and digest, with the shape
checks of its eight fields (judging their values is core/auth/auth_proof.py's)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from tollway._core.basics.keccak import keccak

DOMAIN_NAME = "Tollway"
DOMAIN_VERSION = "1"

# Field order is the signed order; it must match _AGENT_PROOF_TYPE_STRING.
AGENT_PROOF_TYPES: dict[str, list[dict[str, str]]] = {
    "AgentProof": [
        {"name": "agent", "type": "address"},
        {"name": "scope", "type": "string"},
        {"name": "method", "type": "string"},
        {"name": "path", "type": "string"},
        {"name": "bodyHash", "type": "bytes32"},
        {"name": "issuedAt", "type": "uint64"},
        {"name": "expiresAt", "type": "uint64"},
        {"name": "nonce", "type": "bytes32"},
    ]
}
_FIELDS = frozenset(f["name"] for f in AGENT_PROOF_TYPES["AgentProof"])
_AGENT_PROOF_TYPEHASH = keccak(
    b"AgentProof(address agent,string scope,string method,string path,"
    b"bytes32 bodyHash,uint64 issuedAt,uint64 expiresAt,bytes32 nonce)"
)
_DOMAIN_TYPEHASH = keccak(b"EIP712Domain(string name,string version,uint256 chainId)")
_NAME_HASH = keccak(DOMAIN_NAME.encode())
_VERSION_HASH = keccak(DOMAIN_VERSION.encode())

_UINT64_MAX = 2**64 - 1
_HEX = frozenset("0123456789abcdefABCDEF")
_ZERO12 = b"\x00" * 12


class ProofError(Exception):
    """A refused proof: `reason` is a short machine code, `message` is for humans."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


def domain_data(chain_id: int) -> dict[str, Any]:
    """The EIP-712 domain a client signs with (no verifyingContract)."""
    return {"name": DOMAIN_NAME, "version": DOMAIN_VERSION, "chainId": chain_id}


@lru_cache(maxsize=32)
def _domain_separator(chain_id: int) -> bytes:
    return keccak(_DOMAIN_TYPEHASH + _NAME_HASH + _VERSION_HASH + chain_id.to_bytes(32, "big"))


@lru_cache(maxsize=1024)
def _keccak_text(value: bytes) -> bytes:
    # scope and method take a handful of values; caching their hashes saves two keccaks a call.
    return keccak(value)


def _malformed(message: str) -> ProofError:
    return ProofError("malformed", message)


def _hex_bytes(value: Any, field: str, size: int) -> bytes:
    """`0x` + exactly 2*size hex digits (either case) -> raw bytes."""
    if (
        not isinstance(value, str)
        or len(value) != 2 + 2 * size
        or value[:2] not in ("0x", "0X")
        or not _HEX.issuperset(value[2:])
    ):
        raise _malformed(f"{field} must be 0x followed by {2 * size} hex digits")
    return bytes.fromhex(value[2:])


def _uint64(value: Any, field: str) -> int:
    # bool is an int subclass; JSON floats (1.0, 1e9) are refused too.
    if type(value) is not int or not 0 <= value <= _UINT64_MAX:
        raise _malformed(f"{field} must be a JSON integer between 0 and 2**64-1")
    return value


def _string(value: Any, field: str) -> bytes:
    if not isinstance(value, str):
        raise _malformed(f"{field} must be a string")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from \udXXX escapes
        raise _malformed(f"{field} is not valid UTF-8 text") from None


class _Message:
    """The eight fields of an AgentProof, type-checked but not yet judged."""

    __slots__ = ("agent", "scope", "method", "path", "body_hash", "issued_at", "expires_at", "nonce", "_encoded")

    def __init__(self, message: Any) -> None:
        if not isinstance(message, Mapping):
            raise _malformed("message must be a JSON object")
        if message.keys() != _FIELDS:
            missing = sorted(_FIELDS - message.keys())
            extra = sorted(set(message.keys()) - _FIELDS)
            raise _malformed(f"message fields wrong (missing {missing}, unexpected {extra})")
        self.agent = _hex_bytes(message["agent"], "agent", 20)
        scope = _string(message["scope"], "scope")
        method = _string(message["method"], "method")
        path = _string(message["path"], "path")
        self.scope: str = message["scope"]
        self.method: str = message["method"]
        self.path: str = message["path"]
        self.body_hash = _hex_bytes(message["bodyHash"], "bodyHash", 32)
        self.issued_at = _uint64(message["issuedAt"], "issuedAt")
        self.expires_at = _uint64(message["expiresAt"], "expiresAt")
        self.nonce = _hex_bytes(message["nonce"], "nonce", 32)
        self._encoded = b"".join(
            (
                _AGENT_PROOF_TYPEHASH,
                _ZERO12,
                self.agent,
                _keccak_text(scope),
                _keccak_text(method),
                keccak(path),
                self.body_hash,
                self.issued_at.to_bytes(32, "big"),
                self.expires_at.to_bytes(32, "big"),
                self.nonce,
            )
        )

    def digest(self, chain_id: int) -> bytes:
        return keccak(b"\x19\x01" + _domain_separator(chain_id) + keccak(self._encoded))


def agent_proof_digest(message: Mapping[str, Any], chain_id: int) -> bytes:
    """The 32-byte EIP-712 digest a wallet signs for `message` on `chain_id`.

    Only shapes are checked here (ProofError `malformed`); values are judged by
    `verify_agent_proof`.
    """
    return _Message(message).digest(chain_id)
