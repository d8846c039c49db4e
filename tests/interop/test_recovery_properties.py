"""Signer recovery of EIP-3009 authorizations (libsecp256k1 directly) held equal to
eth-account's on random keys, authorizations and signatures, including the
refusals: every malformed signature is refused with the one x402 reason."""

from __future__ import annotations

import pytest
from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_utils import to_checksum_address
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tollway._core.payments import x402
from tollway._core.payments.eip3009 import (
    SECP256K1_HALF_N,
    SECP256K1_N,
    TRANSFER_WITH_AUTHORIZATION_TYPES,
    authorization_digest,
    checksum_address,
    eip712_domain,
    recover_payer,
)
from tollway._core.payments.networks import NETWORKS, get_network
from tollway._core.payments.x402 import Authorization, PaymentError

NET = get_network("local")

keys = st.integers(min_value=1, max_value=SECP256K1_N - 1).map(lambda k: k.to_bytes(32, "big"))
raw_addresses = st.binary(min_size=20, max_size=20)
addresses = raw_addresses.map(to_checksum_address)
uint256 = st.integers(min_value=0, max_value=2**256 - 1)
nonces = st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex())
networks = st.sampled_from(sorted(NETWORKS)).map(NETWORKS.__getitem__)


@st.composite
def authorizations(draw: st.DrawFn) -> Authorization:
    frm = draw(addresses)
    return Authorization(
        from_=draw(st.sampled_from([frm, frm.lower()])),
        to=draw(addresses),
        value=draw(uint256),
        valid_after=draw(uint256),
        valid_before=draw(uint256),
        nonce=draw(nonces),
    )


def _typed(network, auth: Authorization):
    return encode_typed_data(
        domain_data=eip712_domain(network),
        message_types=TRANSFER_WITH_AUTHORIZATION_TYPES,
        message_data={
            "from": to_checksum_address(auth.from_),
            "to": auth.to,
            "value": auth.value,
            "validAfter": auth.valid_after,
            "validBefore": auth.valid_before,
            "nonce": bytes.fromhex(auth.nonce[2:]),
        },
    )


def _eth_account_recovers(digest: bytes, sig: bytes) -> str | None:
    """What eth-account recovers from a 65-byte signature, or None when it refuses."""
    v = sig[64]
    try:
        return Account._recover_hash(digest, signature=sig[:64] + bytes((v + 27 if v < 27 else v,)))
    except Exception:
        return None


def _refused(network, auth: Authorization, signature: str) -> PaymentError:
    with pytest.raises(PaymentError) as caught:
        recover_payer(network, auth, signature)
    assert caught.value.reason == x402.ERR_INVALID_SIGNATURE
    return caught.value


def _flip_v(v: int) -> int:
    return {0: 1, 1: 0, 27: 28, 28: 27}[v]


@settings(max_examples=80, deadline=None)
@given(
    key=keys,
    network=networks,
    auth=authorizations(),
    zero_one_v=st.booleans(),
    prefix=st.sampled_from(["0x", "0X", ""]),
)
def test_recovery_equals_eth_account_and_the_signer(key, network, auth, zero_one_v, prefix):
    signer = Account.from_key(key)
    typed = _typed(network, auth)
    signed = Account.sign_message(typed, key)
    sig = bytes(signed.signature)
    assert sig[64] in (27, 28)
    if zero_one_v:
        sig = sig[:64] + bytes((sig[64] - 27,))
    ours = recover_payer(network, auth, prefix + sig.hex())
    assert ours == signer.address
    assert ours == Account.recover_message(typed, signature=bytes(signed.signature))
    assert ours == Account._recover_hash(authorization_digest(network, auth), signature=bytes(signed.signature))


@settings(max_examples=40, deadline=None)
@given(key=keys, auth=authorizations())
def test_high_s_twin_is_refused(key, auth):
    digest = authorization_digest(NET, auth)
    sig = bytes(Account.unsafe_sign_hash(digest, key).signature)
    r, s, v = sig[:32], int.from_bytes(sig[32:64], "big"), sig[64]
    assert s <= SECP256K1_HALF_N  # eth-account signs low-s
    twin = r + (SECP256K1_N - s).to_bytes(32, "big") + bytes((_flip_v(v),))
    assert _eth_account_recovers(digest, twin) == Account.from_key(key).address  # a valid signature, malleated
    assert "high" in _refused(NET, auth, "0x" + twin.hex()).message
    for low_v in (0, 1):  # the same twin with a 0/1 recovery id
        _refused(NET, auth, "0x" + twin[:64].hex() + bytes((low_v,)).hex())


@settings(max_examples=300, deadline=None)
@given(
    auth=authorizations(),
    r=st.integers(1, SECP256K1_N - 1),
    s=st.integers(1, SECP256K1_HALF_N),
    v=st.sampled_from([0, 1, 27, 28]),
)
def test_any_in_range_signature_recovers_as_eth_account_does(auth, r, s, v):
    """Random r (about half are no curve point's x) and low s: either both recover
    the same address or both refuse; ours refuses with the x402 reason only."""
    sig = r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes((v,))
    theirs = _eth_account_recovers(authorization_digest(NET, auth), sig)
    if theirs is None:
        _refused(NET, auth, "0x" + sig.hex())
    else:
        assert recover_payer(NET, auth, "0x" + sig.hex()) == theirs


@settings(max_examples=200, deadline=None)
@given(auth=authorizations(), raw=st.binary(min_size=0, max_size=130))
def test_random_bytes_of_any_length_are_refused_or_match(auth, raw):
    if len(raw) == 65:
        r, s, v = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:64], "big"), raw[64]
        assume(not (0 < r < SECP256K1_N and 0 < s <= SECP256K1_HALF_N and v in (0, 1, 27, 28)))
    _refused(NET, auth, "0x" + raw.hex())


@settings(max_examples=200, deadline=None)
@given(auth=authorizations(), text=st.text(max_size=140))
def test_random_text_is_refused(auth, text):
    try:
        bytes.fromhex(text.removeprefix("0x").removeprefix("0X"))
    except ValueError:
        pass
    else:
        assume(False)  # valid hex is the cases above
    _refused(NET, auth, text)


bad_vs = st.integers(0, 255).filter(lambda v: v not in (0, 1, 27, 28))


@settings(max_examples=100, deadline=None)
@given(
    auth=authorizations(),
    r=st.integers(1, SECP256K1_N - 1),
    s=st.integers(1, SECP256K1_HALF_N),
    v=st.sampled_from([0, 1, 27, 28]),
    above=st.integers(0, 2**256 - 1 - SECP256K1_N),
    high=st.integers(1, SECP256K1_HALF_N + 1),
    bad_v=bad_vs,
    which=st.sampled_from(["r=0", "s=0", "r>=n", "s>=n", "high-s", "bad v"]),
)
def test_out_of_range_parts_are_refused(auth, r, s, v, above, high, bad_v, which):
    """One part out of range, the others fine."""
    if which == "r=0":
        r = 0
    elif which == "s=0":
        s = 0
    elif which == "r>=n":
        r = SECP256K1_N + above
    elif which == "s>=n":
        s = SECP256K1_N + above
    elif which == "high-s":
        s = SECP256K1_HALF_N + high  # up to n itself
    else:
        v = bad_v
    sig = r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes((v,))
    _refused(NET, auth, "0x" + sig.hex())


@settings(max_examples=500, deadline=None)
@given(raw=raw_addresses)
def test_checksum_matches_eth_utils(raw):
    assert checksum_address(raw.hex()) == to_checksum_address(raw)
    assert checksum_address(raw.hex()) == to_checksum_address("0x" + raw.hex())
