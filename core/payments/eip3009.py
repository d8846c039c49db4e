"""EIP-3009 TransferWithAuthorization for USDC: the EIP-712 digest (hand-rolled,
cached domain separators), signer recovery, the x402 `exact` checks, and the
nonce reservation key; plus test/bench helpers that sign and build headers."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from typing import Any

from coincurve import PublicKey
from eth_account import Account

from tollway._core.basics.keccak import keccak
from tollway._core.payments.networks import Network
from tollway._core.payments.x402 import (
    ERR_AUTHORIZATION_VALUE_MISMATCH,
    ERR_INVALID_SIGNATURE,
    ERR_RECIPIENT_MISMATCH,
    ERR_VALID_AFTER_FUTURE,
    ERR_VALID_BEFORE_EXPIRED,
    X402_VERSION,
    Authorization,
    PaymentError,
    _b64json,
)

SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
SECP256K1_HALF_N = SECP256K1_N // 2

_DOMAIN_TYPEHASH = keccak(b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")
_TRANSFER_TYPEHASH = keccak(
    b"TransferWithAuthorization(address from,address to,uint256 value,"
    b"uint256 validAfter,uint256 validBefore,bytes32 nonce)"
)
_ZERO12 = bytes(12)

# eth-account typed-data description of the same struct (slow path: signing only).
TRANSFER_WITH_AUTHORIZATION_TYPES: dict[str, list[dict[str, str]]] = {
    "TransferWithAuthorization": [
        {"name": "from", "type": "address"},
        {"name": "to", "type": "address"},
        {"name": "value", "type": "uint256"},
        {"name": "validAfter", "type": "uint256"},
        {"name": "validBefore", "type": "uint256"},
        {"name": "nonce", "type": "bytes32"},
    ]
}


def _addr_word(address: str) -> bytes:
    return _ZERO12 + bytes.fromhex(address[2:])


@lru_cache(maxsize=64)
def _domain_separator(chain_id: int, asset: str, name: str, version: str) -> bytes:
    return keccak(
        _DOMAIN_TYPEHASH
        + keccak(name.encode("utf-8"))
        + keccak(version.encode("utf-8"))
        + chain_id.to_bytes(32, "big")
        + _addr_word(asset)
    )


def domain_separator(network: Network) -> bytes:
    return _domain_separator(network.chain_id, network.asset.lower(), network.eip712_name, network.eip712_version)


def eip712_domain(network: Network) -> dict[str, Any]:
    """The EIP-712 domain as eth-account / wallets take it."""
    return {
        "name": network.eip712_name,
        "version": network.eip712_version,
        "chainId": network.chain_id,
        "verifyingContract": network.asset,
    }


def authorization_digest(network: Network, auth: Authorization) -> bytes:
    """EIP-712 digest of `auth` under the network's USDC domain."""
    struct_hash = keccak(
        _TRANSFER_TYPEHASH
        + _addr_word(auth.from_)
        + _addr_word(auth.to)
        + auth.value.to_bytes(32, "big")
        + auth.valid_after.to_bytes(32, "big")
        + auth.valid_before.to_bytes(32, "big")
        + bytes.fromhex(auth.nonce[2:])
    )
    return keccak(b"\x19\x01" + domain_separator(network) + struct_hash)


def _invalid_sig(message: str) -> PaymentError:
    return PaymentError(ERR_INVALID_SIGNATURE, message)


@lru_cache(maxsize=4096)
def checksum_address(address_hex: str) -> str:
    """EIP-55 form of a 40-digit lowercase hex address: a letter is upper case where
    the same digit of keccak(lowercase hex) is 8 or more."""
    digest = keccak(address_hex.encode("ascii")).hex()
    return "0x" + "".join(c.upper() if d >= "8" else c for c, d in zip(address_hex, digest))


def recover_payer(network: Network, auth: Authorization, signature_hex: str) -> str:
    """Checksummed address that signed `auth`; refuses malformed, high-s or odd-v
    signatures with `invalid_exact_evm_payload_signature`."""
    found = _recovered(network, auth, signature_hex)
    if isinstance(found, PaymentError):
        raise PaymentError(found.reason, found.message)
    return found


@lru_cache(maxsize=4096)
def _recovered(network: Network, auth: Authorization, signature_hex: str) -> str | PaymentError:
    """`recover_payer`'s answer, the refusal as a value. Kept for a while: one request
    recovers its payer twice (its rate-limit identity, then the payment's check), and the
    second finds the signature read, the digest hashed and the point recovered."""
    h = signature_hex[2:] if signature_hex[:2] in ("0x", "0X") else signature_hex
    try:
        sig = bytes.fromhex(h)
    except ValueError:
        return _invalid_sig("signature is not hex")
    if len(sig) != 65:
        return _invalid_sig(f"signature must be 65 bytes, got {len(sig)}")
    r = int.from_bytes(sig[:32], "big")
    s = int.from_bytes(sig[32:64], "big")
    v = sig[64]
    if v not in (0, 1, 27, 28):
        return _invalid_sig(f"signature v={v} is not 0, 1, 27 or 28")
    if not (0 < r < SECP256K1_N) or s == 0:
        return _invalid_sig("signature r or s is out of range")
    if s > SECP256K1_HALF_N:
        return _invalid_sig("signature s is high (non-canonical, malleable)")
    # libsecp256k1 takes the recovery id (0 or 1) after r and s, and the digest as is.
    address = _signer(network, auth, sig[:64] + bytes((v - 27 if v >= 27 else v,)))
    if address is None:
        return _invalid_sig("signature does not recover to an address")
    return address


def _signer(network: Network, auth: Authorization, signature: bytes) -> str | None:
    """The checksummed address whose key made `signature` (r, s, recovery id) over the
    EIP-712 digest of `auth`, None when none recovers."""
    try:
        digest = authorization_digest(network, auth)
        point = PublicKey.from_signature_and_message(signature, digest, hasher=None)
    except Exception:  # a field the digest cannot encode, or ValueError: no point recovers
        return None
    # The address is the last 20 bytes of keccak over the uncompressed point without its 0x04 prefix.
    return checksum_address(keccak(point.format(compressed=False)[1:])[12:].hex())


def verify_authorization(
    network: Network,
    auth: Authorization,
    signature_hex: str,
    *,
    pay_to: str,
    amount_micro: int,
    now: int,
    min_validity_s: int = 6,
) -> str:
    """Check an `exact` EIP-3009 payment; returns the payer (checksummed).

    Order: signature recovers `from` (low-s), `to` == pay_to, `value` == amount,
    `validAfter` <= now, `validBefore` >= now + min_validity_s. The nonce is not
    checked here (see `authorization_key`)."""
    payer = recover_payer(network, auth, signature_hex)
    if payer.lower() != auth.from_.lower():
        raise _invalid_sig("signature was not made by authorization.from")
    if auth.to.lower() != pay_to.lower():
        raise PaymentError(ERR_RECIPIENT_MISMATCH, f"authorization.to is {auth.to}; pay to {pay_to}")
    if auth.value != amount_micro:
        raise PaymentError(
            ERR_AUTHORIZATION_VALUE_MISMATCH,
            f"authorization.value is {auth.value}; the price is exactly {amount_micro}",
        )
    if auth.valid_after > now:
        raise PaymentError(ERR_VALID_AFTER_FUTURE, f"authorization is not valid before {auth.valid_after}")
    if auth.valid_before < now + min_validity_s:
        raise PaymentError(
            ERR_VALID_BEFORE_EXPIRED,
            f"authorization expires at {auth.valid_before}; it must stay valid at least {min_validity_s} s after {now}",
        )
    return payer


def authorization_key(network: Network, auth: Authorization) -> str:
    """Primary key reserving (chainId, asset, from, nonce): one settlement per nonce."""
    key = f"{network.chain_id}:{network.asset.lower()}:{auth.from_.lower()}:{auth.nonce.lower()}"
    return hashlib.sha256(key.encode("ascii")).hexdigest()


# ------------------------------------------------------- client side (tests, bench, docs)


def sign_authorization(
    account: Any,
    network: Network,
    *,
    to: str,
    value: int,
    valid_after: int,
    valid_before: int,
    nonce: str | None = None,
) -> tuple[Authorization, str]:
    """Sign a TransferWithAuthorization with an eth-account LocalAccount."""
    nonce = (nonce or "0x" + os.urandom(32).hex()).lower()
    auth = Authorization(
        from_=account.address,
        to=to,
        value=int(value),
        valid_after=int(valid_after),
        valid_before=int(valid_before),
        nonce=nonce,
    )
    signed = Account.sign_typed_data(
        account.key,
        domain_data=eip712_domain(network),
        message_types=TRANSFER_WITH_AUTHORIZATION_TYPES,
        message_data={
            "from": auth.from_,
            "to": auth.to,
            "value": auth.value,
            "validAfter": auth.valid_after,
            "validBefore": auth.valid_before,
            "nonce": bytes.fromhex(nonce[2:]),
        },
    )
    return auth, "0x" + bytes(signed.signature).hex()


def make_payment_header(
    network: Network,
    requirements: dict[str, Any],
    auth: Authorization,
    signature: str,
    *,
    resource: dict[str, Any] | None = None,
) -> str:
    """A v2 `PAYMENT-SIGNATURE` header as the official client builds it: base64 of `make_payment`."""
    return _b64json(make_payment(network, requirements, auth, signature, resource=resource))


def make_payment(
    network: Network,
    requirements: dict[str, Any],
    auth: Authorization,
    signature: str,
    *,
    resource: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A v2 payment object: {x402Version, payload: {authorization, signature}, accepted[, resource]}."""
    body: dict[str, Any] = {
        "x402Version": X402_VERSION,
        "payload": {"authorization": auth.to_wire(), "signature": signature},
        "accepted": requirements,
    }
    if resource is not None:
        body["resource"] = resource
    return body
