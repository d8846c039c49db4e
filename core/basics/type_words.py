"""What a type expects, in words ("an integer from 1 to 10", "one of "a", "b""),
for the messages that name a failing field (core/basics/input_problems.py)."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from typing import Any

import msgspec.inspect as mi


def _num(x: Any) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def json_text(v: Any) -> str:
    return json.dumps(v.value if isinstance(v, enum.Enum) else v)


def one_of_text(values: Iterable[Any]) -> str:
    shown = [json_text(v) for v in values]
    if len(shown) <= 2:
        return " or ".join(shown)
    return "one of " + ", ".join(shown[:-1]) + " or " + shown[-1]


def bounds_text(t: Any) -> str | None:
    """`from 1 to 50`, `at least 1950`, `greater than 0 and at most 1`..., or None."""
    lo = f"at least {_num(t.ge)}" if t.ge is not None else f"greater than {_num(t.gt)}" if t.gt is not None else None
    hi = f"at most {_num(t.le)}" if t.le is not None else f"less than {_num(t.lt)}" if t.lt is not None else None
    if t.ge is not None and t.le is not None:
        text = f"from {_num(t.ge)} to {_num(t.le)}"
    else:
        text = " and ".join(p for p in (lo, hi) if p) or None
    if t.multiple_of is not None:
        text = (text + ", " if text else "") + f"a multiple of {_num(t.multiple_of)}"
    return text


def count_text(lo: int | None, hi: int | None, unit: str) -> str | None:
    """`2 to 40 characters`, `at most 20 items`, `not empty`..., or None."""
    if lo is not None and hi is not None:
        return f"exactly {lo} {unit}" if lo == hi else f"{lo} to {hi} {unit}"
    if lo is not None:
        return "not empty" if lo == 1 else f"at least {lo} {unit}"
    if hi is not None:
        return f"at most {hi} {unit}"
    return None


def _of(base: str, extra: str | None) -> str:
    """`a list` + `at most 20 items` -> `a list of at most 20 items`."""
    if not extra:
        return base
    if extra == "not empty":
        return "a non-empty " + base.split(" ", 1)[1]
    if extra.startswith(("from ", "greater ", "less ", "a multiple")):
        return f"{base} {extra}"
    return f"{base} of {extra}"


_SIMPLE = {
    mi.BoolType: "true or false",
    mi.NoneType: "null",
    mi.AnyType: "any value",
    mi.DateTimeType: "an ISO 8601 date-time",
    mi.DateType: "an ISO 8601 date (YYYY-MM-DD)",
    mi.TimeType: "an ISO 8601 time",
    mi.TimeDeltaType: "an ISO 8601 duration",
    mi.UUIDType: "a UUID",
    mi.DecimalType: "a decimal number",
    mi.BytesType: "base64-encoded bytes",
    mi.ByteArrayType: "base64-encoded bytes",
}


def expected(t: Any) -> str:
    """What a value of type `t` must be, in words: `a whole number from 1 to 50`."""
    if isinstance(t, mi.Metadata):
        return expected(t.type)
    if isinstance(t, mi.IntType):
        return _of("a whole number", bounds_text(t))
    if isinstance(t, mi.FloatType):
        return _of("a number", bounds_text(t))
    if isinstance(t, mi.StrType):
        return _of("a string", count_text(t.min_length, t.max_length, "characters"))
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return _of("a list", count_text(t.min_length, t.max_length, "items"))
    if isinstance(t, mi.TupleType):
        return f"a list of exactly {len(t.item_types)} items"
    if isinstance(t, (mi.DictType, mi.StructType, mi.TypedDictType, mi.DataclassType)):
        return "an object"
    if isinstance(t, mi.LiteralType):
        return one_of_text(t.values)
    if isinstance(t, mi.EnumType):
        return one_of_text(t.cls)
    if isinstance(t, mi.UnionType):
        words = list(dict.fromkeys(expected(m) for m in t.types))
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    for kind, text in _SIMPLE.items():
        if isinstance(t, kind):
            return text
    return "a valid value"
