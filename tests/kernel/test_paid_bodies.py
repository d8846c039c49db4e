"""What the paid path makes as dicts is the builtins of the wire types that declare it, member
for member and in order (property tests): a new receipt's signed body (`ReceiptBook.sign`)
is `msgspec.to_builtins` of its `wire.ReceiptBody`, and still verifies; an inline answer's
`data` (`PaidCalls._success`) is `CallMeta`'s builtins merged with the tool's output; a prepared
call's input hash (for x402 alone) is made when first asked."""

from __future__ import annotations

import datetime
import decimal
from types import SimpleNamespace

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tollway._core.basics.ids import iso
from tollway._core.basics.money import usdc
from tollway._core.calls.pipeline import PaidCalls
from tollway._core.receipts.receipt_signing import ReceiptSigner, metadata_digest, verify_receipt
from tollway._core.receipts.receipts import ReceiptBook, ReceiptDraft
from tollway._core.wire.calls import CallMeta
from tollway._core.wire.receipts import ReceiptBody

SIGNER = ReceiptSigner(b"\x05" * 32)
UNSIGNED = ("key_id", "alg", "digest", "signature")
COPIED = (
    "agent_id",
    "soul_agent_id",
    "category",
    "subcategory",
    "tool",
    "request_id",
    "payment_method",
    "status",
    "execution_status",
    "goal_id",
    "settlement_tx",
    "memo",
    "decision_context",
)
text = st.text(max_size=12)
maybe = st.none() | text
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
drafts = st.builds(
    ReceiptDraft,
    agent_id=text,
    category=text,
    subcategory=maybe,
    amount=st.integers(-(10**12), 10**12),
    status=st.sampled_from(["settled", "not_charged", "pending"]),
    execution_status=st.sampled_from(["completed", "failed", "pending"]),
    payment_method=st.sampled_from(["credits", "x402"]),
    tool=maybe,
    request_id=maybe,
    settlement_tx=maybe,
    job_id=maybe,
    memo=maybe,
    decision_context=st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=4),
    metadata=st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    provider_cost=st.none() | st.integers(0, 10**9),
    settled=st.booleans(),
    receipt_id=st.none() | st.just("rcpt_0000000000000000abcd"),
    goal_id=maybe,
    soul_agent_id=maybe,
    service_fee=st.integers(0, 10**9),
    duration_ms=st.none() | st.integers(0, 10**6),
)


@settings(max_examples=300, deadline=None)
@given(drafts)
def test_the_signed_body_is_the_wire_types_builtins(draft: ReceiptDraft) -> None:
    signed, values = ReceiptBook(SIGNER).sign(draft)
    created_ms = values[9]
    copied = {name: getattr(draft, name) for name in COPIED}  # the draft's fields the body says as they are
    declared = msgspec.to_builtins(
        ReceiptBody(
            receipt_id=signed["receipt_id"],
            amount_usdc=usdc(draft.amount),
            service_fee=usdc(draft.service_fee),
            revision=1,
            value_tag=None,
            job_id=draft.job_id or draft.request_id,
            metadata_digest=metadata_digest(draft.metadata) if draft.metadata is not None else None,
            created_at=iso(created_ms),
            settled_at=iso(created_ms) if draft.settled else None,
            **copied,
        )
    )
    body = {k: v for k, v in signed.items() if k not in UNSIGNED}
    assert list(body.items()) == list(declared.items())
    assert draft.receipt_id is None or signed["receipt_id"] == draft.receipt_id
    if draft.decision_context is not None:  # the signed body holds a copy, not the draft's own dict
        assert signed["decisionContext"] is not draft.decision_context
    assert msgspec.json.decode(values[7]) == signed
    assert verify_receipt(signed, {SIGNER.key_id: SIGNER.public_key}) == (True, "valid")


class Inner(msgspec.Struct):
    when: datetime.date
    tags: tuple[str, ...]
    price: decimal.Decimal | None = None


class Output(msgspec.Struct):
    count: int
    status: str  # one of CallMeta's names too: the output's value wins, in CallMeta's place
    inner: list[Inner] = []
    maybe: str | msgspec.UnsetType = msgspec.UNSET  # left out when unset


class Renamed(msgspec.Struct, rename="camel"):
    item_count: int
    inner: Inner | None = None


class Omitting(msgspec.Struct, omit_defaults=True):
    count: int
    note: str = ""


class Tagged(msgspec.Struct, tag=True):
    count: int


class AsArray(msgspec.Struct, array_like=True):
    count: int


inners = st.builds(
    Inner,
    when=st.dates(),
    tags=st.lists(text, max_size=2).map(tuple),
    price=st.none() | st.decimals(allow_nan=False, allow_infinity=False, places=2),
)
outputs = (
    st.dictionaries(st.sampled_from(["status", "tool", "results", "request_id", "x"]), json_values, max_size=4)
    | st.builds(
        Output,
        count=st.integers(0, 99),
        status=text,
        inner=st.lists(inners, max_size=2),
        maybe=st.just(msgspec.UNSET) | text,
    )
    | st.builds(Renamed, item_count=st.integers(0, 9), inner=st.none() | inners)
    | st.builds(Omitting, count=st.integers(0, 9), note=st.sampled_from(["", "n"]))
    | st.builds(Tagged, count=st.integers(0, 9))
)


@settings(max_examples=300, deadline=None)
@given(text, text, text, outputs)
def test_an_answers_data_is_callmetas_builtins_then_the_output(request_id, receipt_id, tool, output) -> None:
    """The answer's data, in builtins and as JSON, is CallMeta's builtins merged with the
    output's (a plain Struct's members are kept as they are, Structs inside included)."""
    call = SimpleNamespace(tool=SimpleNamespace(name=tool))
    success = PaidCalls._success(None, call, request_id, receipt_id, output)  # type: ignore[arg-type]
    meta = CallMeta(request_id=request_id, receipt_id=receipt_id, status="completed", tool=tool)
    expected = {**msgspec.to_builtins(meta), **msgspec.to_builtins(output)}
    assert list(msgspec.to_builtins(success.data).items()) == list(expected.items())
    assert msgspec.json.encode(success) == msgspec.json.encode({"data": expected, "success": True})
    assert success.success is True


def test_an_output_written_as_an_array_is_converted_as_before() -> None:
    call = SimpleNamespace(tool=SimpleNamespace(name="t"))
    with pytest.raises(TypeError):  # its builtins are a list: no members to merge, as before
        PaidCalls._success(None, call, "r", "c", AsArray(count=1))  # type: ignore[arg-type]


def test_a_prepared_calls_input_hash_is_made_when_first_asked_and_kept() -> None:
    from tests.support.jobs_plugin import ADD
    from tollway._core.calls.prepare import input_hash_of, prepare

    call = prepare(ADD, b'{"a": 2, "b": 3}')
    assert call._input_hash is None  # a call paid from credits never asks
    first = call.input_hash
    assert first == input_hash_of(call.value) == prepare(ADD, b'{"b": 3, "a": 2}').input_hash
    call.value.a = 99  # kept as first made, whatever happens to the input afterwards
    assert call.input_hash == first != input_hash_of(call.value)
