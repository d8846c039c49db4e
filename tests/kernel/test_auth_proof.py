"""X-Agent-Proof verification (docs/auth.md) with real keys: every acceptance rule and refusal reason."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from pathlib import Path

import pytest
from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_hash.auto import keccak
from eth_utils import to_checksum_address
from hypothesis import given, settings
from hypothesis import strategies as st

from tollway._core.auth.auth_proof import (
    AGENT_PROOF_TYPES,
    ProofError,
    VerifiedProof,
    agent_proof_digest,
    domain_data,
    make_agent_proof,
    verify_agent_proof,
)

CHAIN = 84532
NOW = 1_767_225_600
PATH = "/v1/tools/watches"
BODY = b'{"attribute":"sanctions","key":"ACME"}'
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


@pytest.fixture(scope="module")
def account():
    return Account.create()


@pytest.fixture(scope="module")
def other():
    return Account.create()


def b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def unpack(header: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))


def base_message(account, **overrides) -> dict:
    message = {
        "agent": account.address,
        "scope": "write",
        "method": "POST",
        "path": PATH,
        "bodyHash": "0x" + hashlib.sha256(BODY).hexdigest(),
        "issuedAt": NOW,
        "expiresAt": NOW + 120,
        "nonce": "0x" + "ab" * 32,
    }
    message.update(overrides)
    return message


def sign(account, message: dict, chain_id: int = CHAIN) -> str:
    """Sign an arbitrary message with plain eth-account, independent of make_agent_proof."""
    signed = Account.sign_typed_data(
        account.key,
        domain_data=domain_data(chain_id),
        message_types=AGENT_PROOF_TYPES,
        message_data=message,
    )
    return b64url({"message": message, "signature": signed.signature.to_0x_hex()})


def proof(account, **kw) -> str:
    args = dict(chain_id=CHAIN, scope="write", method="POST", path=PATH, body=BODY, now=NOW)
    args.update(kw)
    return make_agent_proof(account, **args)


def verify(header: str, account=None, *, agent_id_header=None, **kw) -> VerifiedProof:
    args = dict(
        agent_id_header=agent_id_header if agent_id_header is not None else account.address,
        chain_id=CHAIN,
        method="POST",
        path=PATH,
        body=BODY,
        now=NOW,
        required_scope="write",
    )
    args.update(kw)
    return verify_agent_proof(header, **args)


def refused(reason: str, header: str, account=None, **kw) -> ProofError:
    with pytest.raises(ProofError) as info:
        verify(header, account, **kw)
    assert info.value.reason == reason, info.value.message
    assert info.value.message
    return info.value


def with_signature(header: str, signature: str) -> str:
    envelope = unpack(header)
    envelope["signature"] = signature
    return b64url(envelope)


# --- acceptance -------------------------------------------------------------


def test_round_trip(account):
    header = proof(account, nonce="0x" + "AB" * 32)
    assert "=" not in header and "+" not in header and "/" not in header
    result = verify(header, account)
    assert result == VerifiedProof(agent=account.address, scope="write", nonce="0x" + "ab" * 32, expires_at=NOW + 120)


def test_fresh_nonces_differ(account):
    first = verify(proof(account), account).nonce
    second = verify(proof(account), account).nonce
    assert first != second
    assert len(first) == 66 and first == first.lower()


@pytest.mark.parametrize(
    ("scope", "required", "ok"),
    [
        ("read", None, True),
        ("read", "read", True),
        ("write", None, True),
        ("write", "read", True),  # a write proof satisfies a read requirement
        ("write", "write", True),
        ("read", "write", False),
    ],
)
def test_scope_rules(account, scope, required, ok):
    header = proof(account, scope=scope)
    if ok:
        assert verify(header, account, required_scope=required).scope == scope
    else:
        refused("scope_mismatch", header, account, required_scope=required)


def test_unknown_required_scope_is_a_programming_error(account):
    with pytest.raises(ValueError):
        verify(proof(account), account, required_scope="admin")


@pytest.mark.parametrize("spelling", ["lower", "upper", "checksum"])
def test_agent_id_header_compares_case_insensitively(account, spelling):
    address = account.address
    header_value = {
        "lower": address.lower(),
        "upper": "0x" + address[2:].upper(),
        "checksum": address,
    }[spelling]
    assert verify(proof(account), agent_id_header=header_value).agent == address


def test_lower_case_agent_in_message_is_accepted(account):
    header = sign(account, base_message(account, agent=account.address.lower()))
    assert verify(header, account).agent == account.address


def test_padding_and_standard_base64_are_accepted(account):
    header = proof(account)
    raw = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    padded = base64.urlsafe_b64encode(raw).decode()
    standard = base64.b64encode(raw).decode()
    for variant in (padded, standard, standard.rstrip("=")):
        assert verify(variant, account).agent == account.address


def test_request_method_is_upper_cased_and_query_string_ignored(account):
    header = proof(account, method="post")
    assert unpack(header)["message"]["method"] == "POST"
    assert verify(header, account, method="post", path=PATH + "?limit=5").scope == "write"


def test_empty_body_hashes_the_empty_string(account):
    header = proof(account, method="GET", scope="read", body=b"")
    expected = "0x" + hashlib.sha256(b"").hexdigest()
    assert unpack(header)["message"]["bodyHash"] == expected
    assert verify(header, account, method="GET", body=b"", required_scope="read").scope == "read"


@pytest.mark.parametrize("v_offset", [0, 27])
def test_v_may_be_0_1_or_27_28(account, v_offset):
    header = proof(account)
    sig = bytearray(bytes.fromhex(unpack(header)["signature"][2:]))
    sig[64] = (sig[64] - 27 if sig[64] >= 27 else sig[64]) + v_offset
    assert verify(with_signature(header, "0x" + sig.hex()), account).agent == account.address


@pytest.mark.parametrize(
    ("issued", "expires", "reason"),
    [
        (NOW + 30, NOW + 150, None),  # skew limit on issuedAt
        (NOW + 31, NOW + 151, "not_yet_valid"),
        (NOW - 330, NOW - 30, None),  # skew limit on expiresAt
        (NOW - 331, NOW - 31, "expired"),
        (NOW, NOW + 300, None),  # longest lifetime
        (NOW, NOW + 301, "lifetime_too_long"),
        (NOW, NOW, None),
        (NOW, NOW - 1, "malformed"),
    ],
)
def test_time_window(account, issued, expires, reason):
    header = sign(account, base_message(account, issuedAt=issued, expiresAt=expires))
    if reason is None:
        assert verify(header, account).expires_at == expires
    else:
        refused(reason, header, account)


def test_make_agent_proof_lifetime(account):
    assert verify(proof(account, lifetime=300), account).expires_at == NOW + 300
    refused("lifetime_too_long", proof(account, lifetime=301), account)


# --- refusals ----------------------------------------------------------------


def test_agent_mismatch(account, other):
    refused("agent_mismatch", proof(account), agent_id_header=other.address)


def test_agent_id_that_is_not_an_address_is_a_mismatch(account):
    refused("agent_mismatch", proof(account), agent_id_header="3f1c9a2e-0000-4000-8000-000000000000")


def test_method_mismatch(account):
    refused("method_mismatch", proof(account, method="PUT"), account)
    # the message itself must carry the upper-case method
    refused("method_mismatch", sign(account, base_message(account, method="post")), account)


def test_path_mismatch(account):
    refused("path_mismatch", proof(account, path="/v1/tools/watches/1"), account)
    refused("path_mismatch", sign(account, base_message(account, path=PATH + "?a=1")), account)


def test_body_mismatch(account):
    refused("body_mismatch", proof(account), account, body=BODY + b" ")
    refused("body_mismatch", proof(account), account, body=b"")


def test_wrong_chain_without_domain_is_a_bad_signature(account):
    refused("bad_signature", proof(account, chain_id=8453), account)


def test_chain_mismatch_when_the_envelope_names_a_domain(account):
    envelope = unpack(proof(account, chain_id=8453))
    envelope["domain"] = domain_data(8453)
    refused("chain_mismatch", b64url(envelope), account)
    envelope["domain"] = {**domain_data(8453), "chainId": hex(8453)}
    refused("chain_mismatch", b64url(envelope), account)


def test_matching_domain_in_the_envelope_is_accepted(account):
    envelope = unpack(proof(account))
    envelope["domain"] = domain_data(CHAIN)
    assert verify(b64url(envelope), account).agent == account.address
    envelope["domain"] = {**domain_data(CHAIN), "name": "Other"}
    refused("malformed", b64url(envelope), account)
    envelope["domain"] = {**domain_data(CHAIN), "verifyingContract": "0x" + "11" * 20}
    refused("malformed", b64url(envelope), account)


def test_signature_by_another_key(account, other):
    signed_by_other = unpack(sign(other, base_message(account)))["signature"]
    refused("bad_signature", with_signature(proof(account), signed_by_other), account)


def test_tampered_message(account):
    envelope = unpack(proof(account))
    envelope["message"]["nonce"] = "0x" + "cd" * 32
    refused("bad_signature", b64url(envelope), account)


def test_high_s_twin_is_refused(account):
    header = proof(account)
    sig = bytes.fromhex(unpack(header)["signature"][2:])
    r, s, v = sig[:32], int.from_bytes(sig[32:64], "big"), sig[64]
    assert v in (27, 28)
    twin = r + (SECP256K1_N - s).to_bytes(32, "big") + bytes([55 - v])  # 27 <-> 28
    # the twin is a valid signature by the same key: only the low-s rule refuses it
    digest = agent_proof_digest(unpack(header)["message"], CHAIN)
    assert Account._recover_hash(digest, signature=twin) == account.address
    error = refused("bad_signature", with_signature(header, "0x" + twin.hex()), account)
    assert "lower half" in error.message


@pytest.mark.parametrize(
    "mutate",
    [
        lambda sig: sig[:-2],  # 64 bytes
        lambda sig: sig + "00",  # 66 bytes
        lambda sig: sig[:-2] + "1d",  # v = 29
        lambda sig: sig[:-2] + "05",  # v = 5
        lambda sig: "0x" + "00" * 32 + sig[66:],  # r = 0
        lambda sig: sig[:-2] + "zz",  # not hex
    ],
)
def test_bad_signature_shapes(account, mutate):
    header = proof(account)
    refused("bad_signature", with_signature(header, mutate(unpack(header)["signature"])), account)


def test_unrecoverable_signature(account):
    # r and s in range but unrelated to the message: either no point recovers or a stranger does
    header = proof(account)
    sig = (SECP256K1_N - 1).to_bytes(32, "big") + (1).to_bytes(32, "big") + b"\x1b"
    refused("bad_signature", with_signature(header, "0x" + sig.hex()), account)


@pytest.mark.parametrize(
    "header",
    [
        "",
        "   ",
        "not base64!",
        "a",  # impossible base64 length
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        b64url({"message": {}}),
        b64url({"signature": "0x00"}),
        "A" * 5000,
    ],
)
def test_malformed_envelopes(account, header):
    refused("malformed", header, account)


def test_non_object_envelope(account):
    refused("malformed", base64.urlsafe_b64encode(b"[1,2]").decode(), account)
    refused("malformed", b64url({"message": [1], "signature": "0x"}), account)


@pytest.mark.parametrize(
    "change",
    [
        {"scope": "admin"},
        {"scope": 1},
        {"method": None},
        {"issuedAt": float(NOW)},
        {"issuedAt": str(NOW)},
        {"issuedAt": True},
        {"issuedAt": -1},
        {"expiresAt": 2**64},
        {"nonce": "0x" + "ab" * 31},
        {"nonce": "ab" * 32},
        {"nonce": "0x" + "zz" * 32},
        {"bodyHash": hashlib.sha256(BODY).hexdigest()},
        {"agent": "0x1234"},
        {"agent": "not an address at all, but 42 chars long!"},
        {"extra": "field"},
    ],
)
def test_malformed_messages(account, change):
    envelope = unpack(proof(account))
    envelope["message"].update(change)
    refused("malformed", b64url(envelope), account)


def test_missing_message_field(account):
    envelope = unpack(proof(account))
    del envelope["message"]["nonce"]
    refused("malformed", b64url(envelope), account)


def test_signature_must_be_a_string(account):
    refused("malformed", with_signature(proof(account), 12345), account)


# --- digest cross-check against eth-account ---------------------------------


def eth_account_digest(message: dict, chain_id: int) -> bytes:
    signable = encode_typed_data(
        domain_data=domain_data(chain_id), message_types=AGENT_PROOF_TYPES, message_data=message
    )
    return keccak(b"\x19" + signable.version + signable.header + signable.body)


text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80)
uint64 = st.integers(min_value=0, max_value=2**64 - 1)
bytes32_hex = st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex())

messages = st.fixed_dictionaries(
    {
        "agent": st.binary(min_size=20, max_size=20).map(to_checksum_address),
        "scope": st.one_of(st.sampled_from(["read", "write"]), text),
        "method": st.one_of(st.sampled_from(["GET", "POST", "DELETE"]), text),
        "path": text,
        "bodyHash": bytes32_hex,
        "issuedAt": uint64,
        "expiresAt": uint64,
        "nonce": bytes32_hex,
    }
)


@settings(max_examples=200, deadline=None)
@given(message=messages, chain_id=st.integers(min_value=1, max_value=2**256 - 1))
def test_digest_matches_eth_account(message, chain_id):
    assert agent_proof_digest(message, chain_id) == eth_account_digest(message, chain_id)


@settings(max_examples=25, deadline=None)
@given(message=messages)
def test_eth_account_signatures_verify_for_generated_messages(message):
    signer = Account.create()
    message = {**message, "agent": signer.address, "scope": "read", "method": "GET", "path": "/v1/x"}
    message["bodyHash"] = "0x" + hashlib.sha256(b"").hexdigest()
    issued = min(message["issuedAt"], 2**64 - 301)
    message.update(issuedAt=issued, expiresAt=issued + 300)
    result = verify(
        sign(signer, message), signer, method="GET", path="/v1/x", body=b"", now=issued, required_scope=None
    )
    assert result.agent == signer.address and result.nonce == message["nonce"]


def test_docs_client_snippet_builds_a_valid_proof(account):
    """The first Python block of docs/auth.md (plain eth-account) must produce proofs we accept."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "auth.md").read_text()
    snippet = re.findall(r"```python\n(.*?)```", doc, flags=re.S)[0]
    namespace: dict = {}
    exec(compile(snippet, "docs/auth.md", "exec"), namespace)
    header = namespace["agent_proof"](account, chain_id=CHAIN, scope="write", method="post", path=PATH, body=BODY)
    assert header == header.rstrip("=")
    result = verify(header, account, now=int(time.time()))
    assert result.agent == account.address and result.scope == "write"
