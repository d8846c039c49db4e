"""Properties of the diff engine (core/history/diff.py), over generated JSON values:
applying the reported rows to the earlier value gives the later one; equal values
report nothing, whatever their key order or number spelling (1 and 1.0); a boolean
never equals a number; several changed leaves are one `$` row with the whole values."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from tollway._core.history.diff import (
    ENTITY,
    LISTED,
    NOT_LISTED,
    ROOT,
    apply_changes,
    diff,
    entity_change,
    leaf_changes,
)

# Keys that are plain names, and keys that need quoting in a path (dots, brackets,
# quotes, backslashes, spaces, digits first, the empty key, non-ASCII letters).
KEYS = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True),
    st.sampled_from(["a.b", "[0]", 'say "hi"', "back\\slash", "two words", "9lives", "", "$", "ключ", "a]b", "x[1]"]),
    st.text(max_size=4),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=6),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=20,
)


def canonical(value: Any) -> bytes:
    """Strict JSON equality: RFC 8785 text (1 and 1.0 alike, true never 1, key order ignored)."""
    return rfc8785.dumps(value)


@st.composite
def edited(draw: st.DrawFn, value: Any) -> Any:
    """`value` with some leaves, list items or object members changed, added or removed."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        out = dict(value)
        for key in draw(st.lists(st.sampled_from(sorted(value)), max_size=3, unique=True)):
            choice = draw(st.integers(0, 2))
            if choice == 0:
                out[key] = draw(edited(value[key]))
            elif choice == 1:
                del out[key]
            else:
                out[key] = draw(JSON)
        if draw(st.booleans()):
            out[draw(KEYS)] = draw(JSON)
        return out
    if isinstance(value, list) and value and draw(st.booleans()):
        out = list(value)
        for i in draw(st.lists(st.integers(0, len(value) - 1), max_size=3, unique=True)):
            out[i] = draw(edited(value[i]))
        if draw(st.booleans()):
            out.append(draw(JSON))
        return out
    return draw(JSON)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    before = draw(JSON)
    after = draw(st.one_of(edited(before), JSON))
    return before, after


def reordered(value: Any) -> Any:
    """The same value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(v) for v in value]
    return value


def as_floats(value: Any) -> Any:
    """The same value with every integer spelled as a float (1 -> 1.0)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value) if float(value) == value else value
    if isinstance(value, dict):
        return {k: as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_floats(v) for v in value]
    return value


@settings(max_examples=400, deadline=None)
@given(pairs())
def test_applying_the_rows_gives_the_later_value(pair: tuple[Any, Any]) -> None:
    before, after = pair
    for rows in (diff(before, after), leaf_changes(before, after)):
        assert canonical(apply_changes(before, rows)) == canonical(after)
    assert canonical(apply_changes(before, [])) == canonical(before)  # the input is left alone


@settings(max_examples=300, deadline=None)
@given(pairs())
def test_rows_are_empty_exactly_when_the_values_are_equal(pair: tuple[Any, Any]) -> None:
    before, after = pair
    rows = diff(before, after)
    assert (rows == []) == (canonical(before) == canonical(after))
    assert len(rows) <= 1


@settings(max_examples=300, deadline=None)
@given(pairs())
def test_several_changed_leaves_are_one_root_row_with_the_whole_values(pair: tuple[Any, Any]) -> None:
    before, after = pair
    leaves = leaf_changes(before, after)
    rows = diff(before, after)
    if len(leaves) > 1:
        assert rows == [(ROOT, before, after)]
    else:
        assert rows == leaves
    for path, old, new in leaves:  # each leaf really differs
        assert canonical(old) != canonical(new), path


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_equal_values_report_nothing_whatever_the_key_order(value: Any) -> None:
    assert diff(value, value) == []
    assert diff(value, reordered(value)) == []
    assert leaf_changes(reordered(value), value) == []


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_an_integer_equals_its_float_spelling(value: Any) -> None:
    assert diff(value, as_floats(value)) == []
    assert diff(as_floats(value), value) == []


@pytest.mark.parametrize(
    ("before", "after", "rows"),
    [
        (1, 1.0, []),
        ({"a": [1, 2]}, {"a": [1.0, 2.0]}, []),
        (True, 1, [(ROOT, True, 1)]),
        (0, False, [(ROOT, 0, False)]),
        ({"ok": True}, {"ok": 1}, [("ok", True, 1)]),
        ([False], [0.0], [("[0]", False, 0.0)]),
        ({"a": None}, {"a": 0}, [("a", None, 0)]),
        (
            {"recalls": [{"remedy": "x"}] * 3},
            {"recalls": [{"remedy": "x"}] * 2 + [{"remedy": "y"}]},
            [("recalls[2].remedy", "x", "y")],
        ),
        ({"a.b": {"": 1}}, {"a.b": {"": 2}}, [('["a.b"][""]', 1, 2)]),
        ({"a": 1, "b": 1}, {"a": 2, "b": 2}, [(ROOT, {"a": 1, "b": 1}, {"a": 2, "b": 2})]),
        ({"a": 1}, {"a": 1, "b": 2}, [(ROOT, {"a": 1}, {"a": 1, "b": 2})]),
        ({"l": [1]}, {"l": [1, 2]}, [("l", [1], [1, 2])]),
    ],
)
def test_worked_rows(before: Any, after: Any, rows: list[tuple[str, Any, Any]]) -> None:
    found = diff(before, after)
    assert [(f, canonical(b), canonical(a)) for f, b, a in found] == [
        (f, canonical(b), canonical(a)) for f, b, a in rows
    ]
    assert canonical(apply_changes(before, found)) == canonical(after)


def test_a_boolean_never_equals_a_number_anywhere() -> None:
    for flag, number in ((True, 1), (False, 0), (True, 1.0), (False, 0.0)):
        assert diff({"x": [flag]}, {"x": [number]}) == [("x[0]", flag, number)]
        assert diff(number, flag) == [(ROOT, number, flag)]


def test_entity_rows() -> None:
    assert entity_change(False) == (ENTITY, LISTED, NOT_LISTED)
    assert entity_change(True) == (ENTITY, NOT_LISTED, LISTED)
