"""The fast canonical JSON is RFC 8785 byte for byte (property tests against the rfc8785
package over random JSON values: unicode keys and strings, integers at and past ±2^53,
floats of every magnitude), and refuses what RFC 8785 refuses; receipts signed through it
verify as before."""

from __future__ import annotations

import math

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from tollway._core.basics.canonical import canonical_bytes
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt

SAFE = 2**53 - 1
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-SAFE, max_value=SAFE),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=20,
)


def reference(value):
    try:
        return rfc8785.dumps(value)
    except Exception as exc:  # what RFC 8785 refuses (unsafe integers, lone surrogates)
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(values)
def test_the_fast_form_is_rfc8785_byte_for_byte(value) -> None:
    expected = reference(value)
    if isinstance(expected, bytes):
        assert canonical_bytes(value) == expected
    else:
        with pytest.raises(Exception):
            canonical_bytes(value)


@pytest.mark.parametrize(
    "number", [0.85, 1.0, -0.0, 1e-7, 1e-5, 0.0001, 123456.789, 1e16, 1.5e16, 1e21, 1e22, 2.5e-8, math.pi, 5e-324]
)
def test_floats_at_the_format_boundaries(number: float) -> None:
    assert canonical_bytes({"n": number, "v": [number]}) == rfc8785.dumps({"n": number, "v": [number]})


def test_keys_beyond_the_basic_plane_sort_as_rfc8785_says() -> None:
    value = {"\U0001f600": 1, "\uffff": 2, "a": 3, "\u00e9": 4}
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_a_receipt_signed_through_it_verifies() -> None:
    signer = ReceiptSigner(b"\x07" * 32)
    receipt = signer.sign(
        {
            "receipt_id": "rcpt_1",
            "amount_usdc": "0.005000",
            "revision": 1,
            "memo": "caf\u00e9 \U0001f600",
            "decision_context": {"confidence": 0.85, "goal": "x", "alternatives": [1, 2.5]},
            "settled_at": None,
        }
    )
    assert verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")


@given(st.dictionaries(st.sampled_from(["receipt_id", "digest", "signature", "revision", "memo"]), scalars))
def test_the_signed_form_is_a_new_dict_without_digest_and_signature(receipt) -> None:
    """`signed_form` (a plain copy when neither is there) keeps every other member in order."""
    from tollway._core.receipts.receipt_signing import signed_form

    form = signed_form(receipt)
    assert list(form.items()) == [(k, v) for k, v in receipt.items() if k not in ("digest", "signature")]
    assert form is not receipt
    form["added"] = 1
    assert "added" not in receipt
