"""Keccak-256, Ethereum's hash (the original padding, not NIST's SHA3-256), from
safe-pysha3's C implementation: one call is a fraction of eth-hash's over pycryptodome."""

from __future__ import annotations

from sha3 import keccak_256


def keccak(data: bytes) -> bytes:
    """The 32-byte Keccak-256 digest of `data`."""
    return keccak_256(data).digest()
