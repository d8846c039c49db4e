"""Bounds on every field of a solve request, in its JSON schema.

Most bounds are the families' own checks (`validate`), which refuse with their
specific codes (empty_id, negative_value, magnitude_too_large, too_many_stops,
quantity_too_large, ...): those are shown in the schema only (`shown`), so the
check and its code stay the one place that enforces them. List lengths the
100,000-variable estimate already caps are shown at the longest the estimate
allows. What nothing else limited (the length of ids and unit names, lists
outside the estimate) is enforced here by msgspec (`limit`), refused as
`invalid_input` with code `bad_value` before payment.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from .numbers import MAX_MAGNITUDE

BIG = int(MAX_MAGNITUDE)  # 1e12, as an integer so the schema reads 1000000000000
ID_MAX = 100  # characters of an id, name or reference
UNIT_MAX = 32  # characters of a unit name
LIST_MAX = 100_000  # entries of a list outside the variable estimate


def shown(**schema: Any) -> msgspec.Meta:
    """Bounds the family's check enforces with its own code: in the schema only."""
    return msgspec.Meta(extra_json_schema=schema)


def limit(**constraints: Any) -> msgspec.Meta:
    """Bounds nothing else enforced: msgspec refuses a value outside them."""
    return msgspec.Meta(**constraints)


# ids and references: an empty one is refused by the family (empty_id / unknown_id)
Id = Annotated[str, msgspec.Meta(max_length=ID_MAX, extra_json_schema={"minLength": 1})]
Unit = Annotated[str, limit(min_length=1, max_length=UNIT_MAX)]
Amount = Annotated[float, shown(minimum=0, maximum=BIG)]  # finite, nonnegative, at most 1e12
Signed = Annotated[float, shown(minimum=-BIG, maximum=BIG)]
SignedInt = Annotated[int, shown(minimum=-BIG, maximum=BIG)]
Fraction = Annotated[float, shown(minimum=0, maximum=1)]


def items(kind: Any, *, most: int, least: int | None = None, enforce: bool = False) -> Any:
    """A list of `kind` with at most `most` entries (enforced here when `enforce`, else by
    the family or the variable estimate) and at least `least` (always the family's check)."""
    extra: dict[str, Any] = {} if least is None else {"minItems": least}
    if enforce:
        return Annotated[list[kind], msgspec.Meta(max_length=most, extra_json_schema=extra or None)]
    return Annotated[list[kind], shown(**extra, maxItems=most)]


def mapping(value: Any, *, most: int) -> Any:
    """An object of `<name>: value` with at most `most` names (the family's check: every
    name must be a declared dimension or resource)."""
    return Annotated[dict[str, value], shown(maxProperties=most)]
