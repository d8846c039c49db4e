"""x402 wire format and EIP-3009 verification, with real keys and signatures only,
cross-checked against eth-account and the official x402 SDK client."""

from __future__ import annotations

import base64
import importlib
import json
import re
import time

import pytest
from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_hash.auto import keccak
from eth_utils import to_checksum_address
from hypothesis import given, settings
from hypothesis import strategies as st

from tollway._core.payments import x402
from tollway._core.payments.eip3009 import (
    SECP256K1_N,
    TRANSFER_WITH_AUTHORIZATION_TYPES,
    authorization_digest,
    authorization_key,
    eip712_domain,
    make_payment,
    make_payment_header,
    recover_payer,
    sign_authorization,
    verify_authorization,
)
from tollway._core.payments.networks import NETWORKS, get_network
from tollway._core.payments.x402 import (
    Authorization,
    PaymentError,
    build_requirements,
    check_scheme_and_network,
    decode_payment_header,
    encode_payment_required,
    encode_payment_response,
    quote_id_from,
)

NET = get_network("local")
PRICE = 5_000  # 0.005 USDC
PAY_TO = to_checksum_address("0x" + "ab" * 20)
NOW = 1_750_000_000


@pytest.fixture(scope="module")
def payer():
    return Account.create()


def _signed(payer, **over):
    kw = dict(to=PAY_TO, value=PRICE, valid_after=NOW - 60, valid_before=NOW + 300)
    kw.update(over)
    return sign_authorization(payer, NET, **kw)


def _verify(auth, sig, **over):
    kw = dict(pay_to=PAY_TO, amount_micro=PRICE, now=NOW)
    kw.update(over)
    return verify_authorization(NET, auth, sig, **kw)


def _b64(obj) -> str:
    return base64.b64encode(json.dumps(obj).encode()).decode()


def _unb64(value: str):
    return json.loads(base64.b64decode(value, validate=True))


def _v2_body(auth: Authorization, sig: str, **over):
    body = {
        "x402Version": 2,
        "accepted": build_requirements(NET, PRICE, PAY_TO, "q_123"),
        "payload": {"signature": sig, "authorization": auth.to_wire()},
    }
    body.update(over)
    return body


# ------------------------------------------------------------------ networks


def test_networks():
    assert NET.caip2 == "eip155:84532"
    assert get_network("base").caip2 == "eip155:8453"
    assert get_network("base-sepolia").asset == NET.asset
    for n in NETWORKS.values():
        assert n.asset == to_checksum_address(n.asset)
    with pytest.raises(ValueError):
        get_network("mainnet")


# ------------------------------------------------------------------ EIP-712 digest

addresses = st.binary(min_size=20, max_size=20).map(lambda b: to_checksum_address(b))
uint256 = st.integers(min_value=0, max_value=2**256 - 1)
times = st.integers(min_value=0, max_value=2**64)
nonces = st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex())


@settings(max_examples=60, deadline=None)
@given(
    net=st.sampled_from(sorted(NETWORKS)),
    frm=addresses,
    to=addresses,
    value=uint256,
    va=times,
    vb=times,
    nonce=nonces,
)
def test_digest_matches_eth_account(net, frm, to, value, va, vb, nonce):
    network = NETWORKS[net]
    auth = Authorization(frm, to, value, va, vb, nonce)
    msg = encode_typed_data(
        domain_data=eip712_domain(network),
        message_types=TRANSFER_WITH_AUTHORIZATION_TYPES,
        message_data={
            "from": frm,
            "to": to,
            "value": value,
            "validAfter": va,
            "validBefore": vb,
            "nonce": bytes.fromhex(nonce[2:]),
        },
    )
    expected = keccak(b"\x19" + msg.version + msg.header + msg.body)
    assert authorization_digest(network, auth) == expected
    # lower-case addresses hash the same
    low = Authorization(frm.lower(), to.lower(), value, va, vb, nonce)
    assert authorization_digest(network, low) == expected


@settings(max_examples=15, deadline=None)
@given(value=st.integers(1, 10**12), nonce=nonces, vb=st.integers(NOW + 6, 2**40))
def test_eth_account_signature_recovers(payer, value, nonce, vb):
    auth, sig = sign_authorization(payer, NET, to=PAY_TO, value=value, valid_after=0, valid_before=vb, nonce=nonce)
    assert auth.nonce == nonce and auth.from_ == payer.address
    assert recover_payer(NET, auth, sig) == payer.address
    assert verify_authorization(NET, auth, sig, pay_to=PAY_TO, amount_micro=value, now=NOW) == (payer.address)


def test_digest_matches_official_sdk(payer):
    eip712 = importlib.import_module("x402.mechanisms.evm.eip712")
    types = importlib.import_module("x402.mechanisms.evm.types")
    auth, _ = _signed(payer)
    for network in NETWORKS.values():
        sdk_auth = types.ExactEIP3009Authorization(
            from_address=auth.from_,
            to=auth.to,
            value=str(auth.value),
            valid_after=str(auth.valid_after),
            valid_before=str(auth.valid_before),
            nonce=auth.nonce,
        )
        sdk = eip712.hash_eip3009_authorization(
            sdk_auth, network.chain_id, network.asset, network.eip712_name, network.eip712_version
        )
        assert bytes(sdk) == authorization_digest(network, auth)


def test_domain_differs_per_network(payer):
    auth, sig = _signed(payer)
    # base has another chain id, contract and name: the signature does not carry over
    assert recover_payer(get_network("base"), auth, sig) != payer.address
    # base-sepolia and local share the domain
    assert recover_payer(get_network("base-sepolia"), auth, sig) == payer.address


# ------------------------------------------------------------------ signature checks


def test_verify_ok_and_v_forms(payer):
    auth, sig = _signed(payer)
    assert _verify(auth, sig) == payer.address
    raw = bytes.fromhex(sig[2:])
    assert raw[64] in (27, 28)
    v01 = "0x" + (raw[:64] + bytes([raw[64] - 27])).hex()
    assert _verify(auth, v01) == payer.address
    assert _verify(auth, sig.upper().replace("0X", "0x")) == payer.address
    # case-insensitive comparison of from / payTo
    lower = Authorization(auth.from_.lower(), auth.to.lower(), *vars_tail(auth))
    assert _verify(lower, sig, pay_to=PAY_TO.lower()) == payer.address


def vars_tail(a: Authorization):
    return a.value, a.valid_after, a.valid_before, a.nonce


def _reason(excinfo) -> str:
    return excinfo.value.reason


def test_wrong_recipient(payer):
    auth, sig = _signed(payer, to=to_checksum_address("0x" + "cd" * 20))
    with pytest.raises(PaymentError) as e:
        _verify(auth, sig)
    assert _reason(e) == x402.ERR_RECIPIENT_MISMATCH == "invalid_exact_evm_payload_recipient_mismatch"


@pytest.mark.parametrize("value", [PRICE - 1, PRICE + 1, 0])
def test_wrong_value(payer, value):
    auth, sig = _signed(payer, value=value)
    with pytest.raises(PaymentError) as e:
        _verify(auth, sig)
    assert _reason(e) == x402.ERR_AUTHORIZATION_VALUE_MISMATCH


def test_expired(payer):
    auth, sig = _signed(payer, valid_before=NOW - 1)
    with pytest.raises(PaymentError) as e:
        _verify(auth, sig)
    assert _reason(e) == x402.ERR_VALID_BEFORE_EXPIRED


def test_valid_before_needs_six_seconds(payer):
    auth, sig = _signed(payer, valid_before=NOW + 5)
    with pytest.raises(PaymentError) as e:
        _verify(auth, sig)
    assert _reason(e) == x402.ERR_VALID_BEFORE_EXPIRED
    auth, sig = _signed(payer, valid_before=NOW + 6)
    assert _verify(auth, sig) == payer.address


def test_not_yet_valid(payer):
    auth, sig = _signed(payer, valid_after=NOW + 1)
    with pytest.raises(PaymentError) as e:
        _verify(auth, sig)
    assert _reason(e) == x402.ERR_VALID_AFTER_FUTURE
    auth, sig = _signed(payer, valid_after=NOW)
    assert _verify(auth, sig) == payer.address


def test_tampered_value_breaks_signature(payer):
    auth, sig = _signed(payer, value=1)
    forged = Authorization(auth.from_, auth.to, PRICE, *vars_tail(auth)[1:])
    with pytest.raises(PaymentError) as e:
        _verify(forged, sig)
    assert _reason(e) == x402.ERR_INVALID_SIGNATURE


def test_tampered_nonce_breaks_signature(payer):
    auth, sig = _signed(payer)
    forged = Authorization(auth.from_, auth.to, auth.value, auth.valid_after, auth.valid_before, "0x" + "00" * 32)
    with pytest.raises(PaymentError) as e:
        _verify(forged, sig)
    assert _reason(e) == x402.ERR_INVALID_SIGNATURE


def test_signed_by_someone_else(payer):
    other = Account.create()
    auth, sig = _signed(other)
    claimed = Authorization(
        payer.address, *[getattr(auth, f) for f in ("to", "value", "valid_after", "valid_before", "nonce")]
    )
    with pytest.raises(PaymentError) as e:
        _verify(claimed, sig)
    assert _reason(e) == x402.ERR_INVALID_SIGNATURE


def test_high_s_refused(payer):
    auth, sig = _signed(payer)
    raw = bytes.fromhex(sig[2:])
    r, s, v = raw[:32], int.from_bytes(raw[32:64], "big"), raw[64]
    # the malleated twin (r, n - s, flipped v) is a valid ECDSA signature of the same digest
    flipped = "0x" + (r + (SECP256K1_N - s).to_bytes(32, "big") + bytes([55 - v])).hex()
    mirrored = Account._recover_hash(authorization_digest(NET, auth), signature=bytes.fromhex(flipped[2:]))
    assert mirrored == payer.address  # eth-account alone would accept it
    with pytest.raises(PaymentError) as e:
        _verify(auth, flipped)
    assert _reason(e) == x402.ERR_INVALID_SIGNATURE
    assert "high" in e.value.message


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s[:-2],  # 64 bytes
        lambda s: s + "00",  # 66 bytes
        lambda s: "0x",  # empty
        lambda s: s[:-2] + "1d",  # v = 29
        lambda s: s[:-2] + "02",  # v = 2
        lambda s: s[:4] + "zz" + s[6:],  # not hex
        lambda s: "0x" + "00" * 64 + "1b",  # r = s = 0
    ],
)
def test_malformed_signature(payer, mangle):
    auth, sig = _signed(payer)
    with pytest.raises(PaymentError) as e:
        _verify(auth, mangle(sig))
    assert _reason(e) == x402.ERR_INVALID_SIGNATURE


def test_authorization_key(payer):
    auth, _ = _signed(payer, nonce="0x" + "AB" * 32)
    k = authorization_key(NET, auth)
    assert len(k) == 64 and int(k, 16) >= 0
    lower = Authorization(
        auth.from_.lower(),
        auth.to,
        auth.value,
        auth.valid_after,
        auth.valid_before,
        auth.nonce.upper().replace("0X", "0x"),
    )
    assert authorization_key(NET, lower) == k
    other_nonce = Authorization(auth.from_, auth.to, auth.value, auth.valid_after, auth.valid_before, "0x" + "cd" * 32)
    assert authorization_key(NET, other_nonce) != k
    assert authorization_key(get_network("base"), auth) != k
    # same key whatever the amount or recipient: a nonce is spent once
    again = Authorization(auth.from_, PAY_TO, 1, 0, 1, auth.nonce)
    assert authorization_key(NET, again) == k


# ------------------------------------------------------------------ header decoding


def test_decode_v2(payer):
    auth, sig = _signed(payer)
    req = build_requirements(NET, PRICE, PAY_TO, "q_123")
    header = make_payment_header(NET, req, auth, sig)
    p = decode_payment_header(header)
    assert p.version == 2
    assert p.scheme == "exact" and p.network == "eip155:84532"
    assert p.accepted == req
    assert p.authorization == auth
    assert p.signature == sig
    assert quote_id_from(p) == "q_123"
    assert p.raw["x402Version"] == 2
    check_scheme_and_network(p, NET)
    assert _verify(p.authorization, p.signature) == payer.address


def test_decode_v1_with_int_numbers(payer):
    auth, sig = _signed(payer)
    wire = auth.to_wire()
    wire.update(value=auth.value, validAfter=auth.valid_after, validBefore=auth.valid_before)
    body = {
        "x402Version": 1,
        "scheme": "exact",
        "network": "base-sepolia",
        "payload": {"signature": sig, "authorization": wire},
    }
    p = decode_payment_header(_b64(body))
    assert p.version == 1 and p.accepted is None
    assert p.network == "base-sepolia" and p.scheme == "exact"
    assert p.authorization == auth
    assert quote_id_from(p) is None
    check_scheme_and_network(p, NET)
    assert _verify(p.authorization, p.signature) == payer.address


def test_decode_normalises_nonce_and_signature(payer):
    auth, sig = _signed(payer)
    body = _v2_body(auth, sig)
    body["payload"]["authorization"]["nonce"] = auth.nonce.upper().replace("0X", "0x")
    body["payload"]["signature"] = sig[2:].upper()
    p = decode_payment_header(_b64(body))
    assert p.authorization.nonce == auth.nonce
    assert p.signature == sig


def test_decode_urlsafe_and_unpadded(payer):
    auth, sig = _signed(payer)
    body = _v2_body(auth, sig)
    # make sure the encoding contains url-unsafe characters and needs padding
    for pad in range(12):
        body["resource"] = {"url": "https://x/?" + "?~>" * pad, "description": "ü" * pad}
        raw = json.dumps(body).encode()
        std = base64.b64encode(raw).decode()
        if ("+" in std or "/" in std) and std.endswith("="):
            break
    else:  # pragma: no cover
        pytest.fail("could not build a payload with url-unsafe base64")
    urlsafe = base64.urlsafe_b64encode(raw).decode()
    for variant in (std, std.rstrip("="), urlsafe, urlsafe.rstrip("="), f"  {std}  "):
        assert decode_payment_header(variant).authorization == auth


def _expect_reason(header: str, reason: str = x402.INVALID_PAYLOAD) -> PaymentError:
    with pytest.raises(PaymentError) as e:
        decode_payment_header(header)
    assert e.value.reason == reason, e.value.message
    assert e.value.message
    return e.value


@pytest.mark.parametrize(
    "header",
    [
        "",
        "   ",
        "!!!not base64!!!",
        "a",  # impossible length
        "abc$def",
        "ÿÿÿÿ",
        "A" * (x402.MAX_HEADER_CHARS + 4),
    ],
)
def test_garbage_base64(header):
    _expect_reason(header)


@pytest.mark.parametrize(
    "raw",
    [b"hello world", b"\xff\xfe\x00", b"[1, 2, 3]", b'"string"', b"null", b"{", b"[" * 50_000],
)
def test_not_a_json_object(raw):
    _expect_reason(base64.b64encode(raw).decode()[: x402.MAX_HEADER_CHARS])


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b'"\\ud800"'])
def test_json_beyond_the_standard_refused(payer, literal):
    """A payment whose JSON holds a number JSON has no name for, or a lone surrogate, is
    not JSON: refused as such, wherever in the object it stands."""
    auth, sig = _signed(payer)
    raw = make_payment(NET, build_requirements(NET, PRICE, PAY_TO, "q"), auth, sig)
    raw["resource"] = {"url": "https://t.example/x"}
    text = json.dumps(raw).replace('"https://t.example/x"', literal.decode())
    decode_payment_header(base64.b64encode(json.dumps(raw).encode()).decode())  # the object itself is fine
    _expect_reason(base64.b64encode(text.encode()).decode())


@given(st.text(), st.text())
@settings(max_examples=300, deadline=None)
def test_header_json_is_what_json_dumps_writes(description, url):
    """The PAYMENT-REQUIRED JSON is compact, with non-ASCII text as UTF-8 (not escaped)."""
    req = build_requirements(NET, PRICE, PAY_TO, "q_1")
    expected = json.dumps(
        x402.build_payment_required("payment_required", url, description, [req]),
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    assert base64.b64decode(encode_payment_required("payment_required", url, description, [req])) == expected


def _drop(path):
    def f(body):
        node = body
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return f


def _set(path, value):
    def f(body):
        node = body
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return f


A = ("payload", "authorization")


@pytest.mark.parametrize(
    "mutate",
    [
        _drop(("x402Version",)),
        _drop(("accepted",)),
        _drop(("accepted", "scheme")),
        _drop(("accepted", "network")),
        _drop(("payload",)),
        _drop(("payload", "signature")),
        _drop(A),
        *[_drop(A + (k,)) for k in ("from", "to", "value", "validAfter", "validBefore", "nonce")],
        _set(("x402Version",), True),
        _set(("x402Version",), "two"),
        _set(("accepted",), "exact"),
        _set(("payload",), []),
        _set(("payload", "signature"), 12),
        _set(("payload", "signature"), "0xabc"),
        _set(("payload", "signature"), ""),
        _set(A + ("from",), "0x1234"),
        _set(A + ("to",), "not an address"),
        _set(A + ("value",), "-5"),
        _set(A + ("value",), -5),
        _set(A + ("value",), 5.0),
        _set(A + ("value",), "5.0"),
        _set(A + ("value",), "0x10"),
        _set(A + ("value",), str(2**256)),
        _set(A + ("value",), True),
        _set(A + ("value",), "١٢٣"),  # non-ASCII digits
        _set(A + ("validBefore",), None),
        _set(A + ("nonce",), "0x1234"),
        _set(A + ("nonce",), "ab" * 32),
        _set(A + ("nonce",), 7),
    ],
)
def test_missing_or_bad_fields(payer, mutate):
    auth, sig = _signed(payer)
    body = _v2_body(auth, sig)
    mutate(body)
    _expect_reason(_b64(body))


def test_v1_missing_fields(payer):
    auth, sig = _signed(payer)
    base = {
        "x402Version": 1,
        "scheme": "exact",
        "network": "base-sepolia",
        "payload": {"signature": sig, "authorization": auth.to_wire()},
    }
    for key in ("scheme", "network", "payload"):
        body = dict(base)
        del body[key]
        _expect_reason(_b64(body))


def test_unsupported_version(payer):
    auth, sig = _signed(payer)
    _expect_reason(_b64(_v2_body(auth, sig, x402Version=3)), x402.INVALID_X402_VERSION)


def test_permit2_payload_refused():
    body = {
        "x402Version": 2,
        "accepted": build_requirements(NET, 1, PAY_TO, "q"),
        "payload": {"signature": "0x00", "permit2Authorization": {}},
    }
    err = _expect_reason(_b64(body))
    assert "Permit2" in err.message


@pytest.mark.parametrize(
    "scheme,network,reason",
    [
        ("exact", "eip155:84532", None),
        ("exact", "base-sepolia", None),
        ("exact", "local", None),
        ("exact", "eip155:8453", x402.ERR_NETWORK_MISMATCH),
        ("exact", "base", x402.ERR_NETWORK_MISMATCH),
        ("upto", "eip155:84532", x402.ERR_UNSUPPORTED_SCHEME),
    ],
)
def test_scheme_and_network(payer, scheme, network, reason):
    auth, sig = _signed(payer)
    body = _v2_body(auth, sig)
    body["accepted"].update(scheme=scheme, network=network)
    p = decode_payment_header(_b64(body))
    if reason is None:
        check_scheme_and_network(p, NET)
    else:
        with pytest.raises(PaymentError) as e:
            check_scheme_and_network(p, NET)
        assert e.value.reason == reason


def test_quote_id_absent(payer):
    auth, sig = _signed(payer)
    body = _v2_body(auth, sig)
    del body["accepted"]["extra"]["quoteId"]
    assert quote_id_from(decode_payment_header(_b64(body))) is None
    body["accepted"]["extra"] = "nope"
    assert quote_id_from(decode_payment_header(_b64(body))) is None


# ------------------------------------------------------------------ 402 / settle headers


def test_build_requirements():
    req = build_requirements(get_network("base"), 1_500_000, PAY_TO, "q_9", 60)
    assert req == {
        "scheme": "exact",
        "network": "eip155:8453",
        "amount": "1500000",
        "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        "payTo": PAY_TO,
        "maxTimeoutSeconds": 60,
        "extra": {"name": "USD Coin", "version": "2", "quoteId": "q_9"},
    }


def test_payment_required_round_trip():
    req = build_requirements(NET, PRICE, PAY_TO, "q_123")
    header = encode_payment_required("payment_required", "https://t.example/v1/x", "Lookup", [req])
    assert "\n" not in header and len(header) % 4 == 0
    decoded = _unb64(header)
    assert decoded == {
        "x402Version": 2,
        "error": "payment_required",
        "resource": {
            "url": "https://t.example/v1/x",
            "description": "Lookup",
            "mimeType": "application/json",
        },
        "accepts": [req],
    }
    assert b" " not in base64.b64decode(header)  # compact JSON

    utils = importlib.import_module("x402.http.utils")
    sdk = utils.decode_payment_required_header(header)
    assert sdk.x402_version == 2
    (sdk_req,) = sdk.accepts
    assert sdk_req.amount == str(PRICE) and sdk_req.pay_to == PAY_TO
    assert sdk_req.network == "eip155:84532" and sdk_req.asset == NET.asset
    assert sdk_req.extra == {"name": "USDC", "version": "2", "quoteId": "q_123"}
    assert sdk.resource.mime_type == "application/json"


def test_payment_response_matches_sdk():
    h = encode_payment_response(True, "0x" + "11" * 32, "eip155:84532", PAY_TO)
    assert _unb64(h) == {
        "success": True,
        "payer": PAY_TO,
        "transaction": "0x" + "11" * 32,
        "network": "eip155:84532",
    }
    failed = encode_payment_response(False, "", "eip155:84532", PAY_TO, x402.ERR_NONCE_ALREADY_USED)
    assert _unb64(failed)["errorReason"] == "invalid_exact_evm_nonce_already_used"

    utils = importlib.import_module("x402.http.utils")
    sdk = utils.decode_payment_response_header(h)
    assert sdk.success is True and sdk.transaction == "0x" + "11" * 32 and sdk.payer == PAY_TO
    sdk_failed = utils.decode_payment_response_header(failed)
    assert sdk_failed.success is False and sdk_failed.error_reason == x402.ERR_NONCE_ALREADY_USED


def test_reason_codes_match_sdk():
    c = importlib.import_module("x402.mechanisms.evm.constants")
    assert x402.ERR_INVALID_SIGNATURE == c.ERR_INVALID_SIGNATURE
    assert x402.ERR_RECIPIENT_MISMATCH == c.ERR_RECIPIENT_MISMATCH
    assert x402.ERR_AUTHORIZATION_VALUE_MISMATCH == c.ERR_AUTHORIZATION_VALUE_MISMATCH
    assert x402.ERR_VALID_BEFORE_EXPIRED == c.ERR_VALID_BEFORE_EXPIRED
    assert x402.ERR_VALID_AFTER_FUTURE == c.ERR_VALID_AFTER_FUTURE
    assert x402.ERR_NONCE_ALREADY_USED == c.ERR_NONCE_ALREADY_USED
    assert x402.ERR_INSUFFICIENT_BALANCE == c.ERR_INSUFFICIENT_BALANCE
    assert x402.ERR_NETWORK_MISMATCH == c.ERR_NETWORK_MISMATCH
    assert x402.ERR_UNSUPPORTED_SCHEME == c.ERR_UNSUPPORTED_SCHEME
    assert x402.ERR_TRANSACTION_FAILED == c.ERR_TRANSACTION_FAILED


# ------------------------------------------------------------------ official SDK client


def _sdk_client(account):
    sdk = importlib.import_module("x402")
    from x402.mechanisms.evm import EthAccountSigner
    from x402.mechanisms.evm.exact import ExactEvmClientScheme
    from x402.mechanisms.evm.exact.v1.client import ExactEvmSchemeV1

    client = sdk.x402ClientSync()
    client.register("eip155:*", ExactEvmClientScheme(EthAccountSigner(account)))
    client.register_v1("base-sepolia", ExactEvmSchemeV1(EthAccountSigner(account)))
    return client


def test_official_sdk_v2_payment_verifies():
    utils = importlib.import_module("x402.http.utils")
    account = Account.create()
    client = _sdk_client(account)

    req = build_requirements(NET, PRICE, PAY_TO, "q_sdk", max_timeout_seconds=120)
    required_header = encode_payment_required("payment_required", "https://t.example/v1/tools/lookup", "Lookup", [req])
    payment_required = utils.decode_payment_required_header(required_header)
    sdk_payload = client.create_payment_payload(payment_required)
    header = utils.encode_payment_signature_header(sdk_payload)

    p = decode_payment_header(header)
    assert p.version == 2
    assert p.accepted == req  # echoed unchanged, camelCase
    assert quote_id_from(p) == "q_sdk"
    assert p.raw["resource"]["url"] == "https://t.example/v1/tools/lookup"
    check_scheme_and_network(p, NET)
    now = int(time.time())
    assert p.authorization.valid_after == 0
    assert now + 100 <= p.authorization.valid_before <= now + 125
    payer = verify_authorization(NET, p.authorization, p.signature, pay_to=PAY_TO, amount_micro=PRICE, now=now)
    assert payer == account.address

    # Our client helper builds the same shape the SDK does (and the SDK parses it).
    ours = make_payment_header(NET, req, p.authorization, p.signature, resource=p.raw["resource"])
    assert _unb64(ours) == _unb64(header)
    parsed = utils.decode_payment_signature_header(ours)
    assert parsed.accepted.extra["quoteId"] == "q_sdk"


def test_official_sdk_v1_payment_verifies():
    utils = importlib.import_module("x402.http.utils")
    from x402.schemas.v1 import PaymentRequiredV1

    account = Account.create()
    client = _sdk_client(account)
    required = PaymentRequiredV1.model_validate(
        {
            "x402Version": 1,
            "accepts": [
                {
                    "scheme": "exact",
                    "network": "base-sepolia",
                    "maxAmountRequired": str(PRICE),
                    "resource": "https://t.example/v1/tools/lookup",
                    "payTo": PAY_TO,
                    "maxTimeoutSeconds": 300,
                    "asset": NET.asset,
                    "extra": {"name": NET.eip712_name, "version": NET.eip712_version},
                }
            ],
        }
    )
    header = utils.encode_payment_signature_header(client.create_payment_payload(required))
    p = decode_payment_header(header)
    assert p.version == 1 and p.network == "base-sepolia" and p.accepted is None
    check_scheme_and_network(p, NET)
    payer = verify_authorization(
        NET, p.authorization, p.signature, pay_to=PAY_TO, amount_micro=PRICE, now=int(time.time())
    )
    assert payer == account.address


def test_sdk_payment_for_wrong_amount_refused():
    utils = importlib.import_module("x402.http.utils")
    account = Account.create()
    client = _sdk_client(account)
    req = build_requirements(NET, PRICE - 1, PAY_TO, "q_cheap")
    required = utils.decode_payment_required_header(
        encode_payment_required("payment_required", "https://t.example/x", "x", [req])
    )
    p = decode_payment_header(utils.encode_payment_signature_header(client.create_payment_payload(required)))
    with pytest.raises(PaymentError) as e:
        verify_authorization(NET, p.authorization, p.signature, pay_to=PAY_TO, amount_micro=PRICE, now=int(time.time()))
    assert e.value.reason == x402.ERR_AUTHORIZATION_VALUE_MISMATCH


def test_hot_path_is_fast(payer):
    """decode + verify well under the 300 paid requests/s budget (~3.3 ms each)."""
    auth, sig = _signed(payer)
    header = make_payment_header(NET, build_requirements(NET, PRICE, PAY_TO, "q"), auth, sig)
    n = 200
    t = time.perf_counter()
    for _ in range(n):
        p = decode_payment_header(header)
        _verify(p.authorization, p.signature)
    per_call = (time.perf_counter() - t) / n
    assert per_call < 0.002, f"{per_call * 1e3:.2f} ms per decode+verify"


# The signature's hex as the decoder first read it: a regex of repeated digit pairs.
_HEX_PAIRS = re.compile(r"(?:0x)?((?:[0-9a-fA-F]{2})*)\Z")


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet="0123456789abcdefABCDEFxX \u0660g", max_size=140))
def test_signature_hex_is_read_as_the_digit_pair_rule(payer, text):
    """The payload's signature is taken, lower-cased after one 0x, exactly when it is a
    non-empty run of hex digit pairs (the first decoder's rule, kept as the reference)."""
    auth, _ = _signed(payer)
    body = _v2_body(auth, text)
    pairs = _HEX_PAIRS.match(text)
    if pairs is None or not pairs.group(1):
        _expect_reason(_b64(body))
    else:
        assert x402.decode_payment_header(_b64(body)).signature == "0x" + pairs.group(1).lower()
