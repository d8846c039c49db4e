"""Naming every failing field: when msgspec refuses a body, walk the target type beside
the value (`msgspec.inspect`) and list each problem with a dotted/indexed path
(`items[2].size.kg`) and a message that says what is expected."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import re
import uuid
from typing import Any, Literal

import msgspec
import msgspec.inspect as mi

from tollway._core.basics.type_words import bounds_text, count_text, expected, json_text, one_of_text

# A body can be wrong in thousands of places (a long list of bad items): the
# answer names this many and says how many more there are.
MAX_DETAILS = 100

Kind = Literal["unknown_field", "missing_field", "bad_value"]


@dataclasses.dataclass(frozen=True)
class Problem:
    """One failing field of a body that did not convert."""

    field: str
    message: str
    kind: Kind = "bad_value"

    def detail(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


_TYPE_INFO: dict[Any, Any] = {}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
# Leaf types msgspec judges for the walk (their wire form is a string with rules of its own).
_ORACLE_TYPES: dict[type, type] = {
    mi.DateTimeType: datetime.datetime,
    mi.DateType: datetime.date,
    mi.TimeType: datetime.time,
    mi.TimeDeltaType: datetime.timedelta,
    mi.UUIDType: uuid.UUID,
    mi.DecimalType: decimal.Decimal,
    mi.BytesType: bytes,
    mi.ByteArrayType: bytearray,
}


def _type_info(type_: Any) -> Any:
    try:
        return _TYPE_INFO[type_]
    except KeyError:
        info = _TYPE_INFO[type_] = mi.type_info(type_)
        return info
    except TypeError:  # an unhashable annotation: not cached
        return mi.type_info(type_)


def _subject(path: str) -> str:
    return path or "the body"


def _key_path(path: str, key: str) -> str:
    if _KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _unwrap(t: Any) -> tuple[Any, str | None]:
    """The type under any `Annotated[..., Meta(...)]`, and its description if one is given."""
    description = None
    while isinstance(t, mi.Metadata):
        description = (t.extra_json_schema or {}).get("description") or description
        t = t.type
    return t, description


def _kind_matches(t: Any, v: Any) -> bool:
    """Whether `v` has the JSON kind `t` reads (the first thing msgspec dispatches on)."""
    t, _ = _unwrap(t)
    if isinstance(t, mi.AnyType):
        return True
    if isinstance(t, mi.NoneType):
        return v is None
    if isinstance(t, mi.BoolType):
        return isinstance(v, bool)
    if isinstance(t, mi.IntType):
        return _is_int(v)
    if isinstance(t, mi.FloatType):
        return _is_number(v)
    if isinstance(
        t, (mi.StrType, mi.DateTimeType, mi.DateType, mi.TimeType, mi.UUIDType, mi.BytesType, mi.ByteArrayType)
    ):
        return isinstance(v, str)
    if isinstance(t, (mi.LiteralType, mi.EnumType)):
        values = [m.value for m in t.cls] if isinstance(t, mi.EnumType) else list(t.values)
        return any(type(x) is type(v) for x in values)
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType, mi.TupleType)):
        return isinstance(v, list)
    if isinstance(t, mi.StructType) and t.array_like:
        return isinstance(v, list)
    if isinstance(t, (mi.DictType, mi.StructType, mi.TypedDictType, mi.DataclassType)):
        return isinstance(v, dict)
    if isinstance(t, mi.UnionType):
        return any(_kind_matches(m, v) for m in t.types)
    return True


class _Walk:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.problems: list[Problem] = []
        self.more = 0  # problems found past the limit (the walk stops soon after the first)

    def add(self, field: str, message: str, kind: Kind = "bad_value") -> None:
        if len(self.problems) < self.limit:
            self.problems.append(Problem(field or "$", message, kind))
        else:
            self.more += 1

    def fits(self, t: Any, v: Any) -> bool:
        probe = _Walk(1)
        probe.visit(t, v, "")
        return not probe.problems and not probe.more

    def must(self, path: str, words: str) -> None:
        self.add(path, f"{_subject(path)} must be {words}")

    def visit(self, t: Any, v: Any, path: str) -> None:
        t, description = _unwrap(t)
        if isinstance(t, mi.AnyType):
            return
        if isinstance(t, mi.UnionType):
            return self._union(t, v, path)
        if not _kind_matches(t, v):
            return self.must(path, expected(t))
        if isinstance(t, (mi.IntType, mi.FloatType)):
            return self._number(t, v, path)
        if isinstance(t, mi.StrType):
            return self._string(t, v, path, description)
        if isinstance(t, (mi.LiteralType, mi.EnumType)):
            values = [m.value for m in t.cls] if isinstance(t, mi.EnumType) else list(t.values)
            if not any(type(x) is type(v) and x == v for x in values):
                self.must(path, one_of_text(values))
            return
        if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
            return self._list(t, v, path)
        if isinstance(t, mi.TupleType):
            if len(v) != len(t.item_types):
                return self.must(path, expected(t))
            for i, (item_type, item) in enumerate(zip(t.item_types, v)):
                self.visit(item_type, item, f"{path}[{i}]")
            return
        if isinstance(t, mi.DictType):
            return self._dict(t, v, path)
        if isinstance(t, mi.StructType) and not t.array_like:
            return self._struct(t, v, path)
        if isinstance(t, (mi.BoolType, mi.NoneType)):
            return
        self._oracle(t, v, path)

    # -- leaves ------------------------------------------------------------------------
    def _number(self, t: Any, v: Any, path: str) -> None:
        ok = (
            (t.ge is None or v >= t.ge)
            and (t.gt is None or v > t.gt)
            and (t.le is None or v <= t.le)
            and (t.lt is None or v < t.lt)
            and (t.multiple_of is None or v % t.multiple_of == 0)
        )
        if not ok:
            self.must(path, bounds_text(t) or expected(t))

    def _string(self, t: mi.StrType, v: str, path: str, description: str | None) -> None:
        if (t.min_length is not None and len(v) < t.min_length) or (t.max_length is not None and len(v) > t.max_length):
            words = count_text(t.min_length, t.max_length, "characters")
            self.add(path, f"{_subject(path)} must {'not be empty' if words == 'not empty' else 'be ' + str(words)}")
        elif t.pattern is not None and not re.search(t.pattern, v):
            hint = f" ({description.rstrip('.')})" if description else ""
            self.add(path, f"{_subject(path)} is not in the accepted form{hint}")

    def _oracle(self, t: Any, v: Any, path: str) -> None:
        """Types this walk does not take apart (dates, UUIDs, array-like Structs...): msgspec judges."""
        target = getattr(t, "cls", None) or _ORACLE_TYPES.get(type(t))
        if target is None:
            return
        try:
            msgspec.convert(v, target, strict=True)
        except (msgspec.ValidationError, TypeError, ValueError):
            self.must(path, expected(t))

    # -- containers ----------------------------------------------------------------------
    def _list(self, t: Any, v: list[Any], path: str) -> None:
        if (t.min_length is not None and len(v) < t.min_length) or (t.max_length is not None and len(v) > t.max_length):
            words = count_text(t.min_length, t.max_length, "items")
            self.add(path, f"{_subject(path)} must {'not be empty' if words == 'not empty' else 'have ' + str(words)}")
        for i, item in enumerate(v):
            if self.more:
                return
            self.visit(t.item_type, item, f"{path}[{i}]")

    def _dict(self, t: mi.DictType, v: dict[Any, Any], path: str) -> None:
        if (t.min_length is not None and len(v) < t.min_length) or (t.max_length is not None and len(v) > t.max_length):
            words = count_text(t.min_length, t.max_length, "entries")
            self.add(path, f"{_subject(path)} must {'not be empty' if words == 'not empty' else 'have ' + str(words)}")
        key_type, _ = _unwrap(t.key_type)
        check_keys = isinstance(key_type, (mi.StrType, mi.LiteralType, mi.EnumType))
        for key, item in v.items():
            if self.more:
                return
            where = _key_path(path, str(key))
            if check_keys and not self.fits(t.key_type, key):
                self.add(
                    where,
                    f"{json.dumps(str(key))} is not an accepted key of {_subject(path)}: keys must be {expected(t.key_type)}",
                )
                continue
            self.visit(t.value_type, item, where)

    def _struct(self, t: mi.StructType, v: dict[str, Any], path: str, *, tag_checked: bool = False) -> None:
        fields = {f.encode_name: f for f in t.fields}
        for key, item in v.items():
            if self.more:
                return
            where = _key_path(path, str(key))
            if t.tag_field is not None and key == t.tag_field:
                if not tag_checked and item != t.tag:
                    self.must(where, json_text(t.tag))
                continue
            field = fields.get(key)
            if field is None:
                if t.forbid_unknown_fields:
                    self.add(where, f"{where} is not an accepted field", "unknown_field")
                continue
            self.visit(field.type, item, where)
        for name, field in fields.items():
            if field.required and name not in v:
                where = _key_path(path, name)
                self.add(where, f"{where} is required ({expected(field.type)})", "missing_field")

    def _union(self, t: mi.UnionType, v: Any, path: str) -> None:
        members = [m for m in t.types]
        if v is None:
            if not any(isinstance(_unwrap(m)[0], mi.NoneType) for m in members):
                self.must(path, expected(t))
            return
        tagged = [
            m for m in (_unwrap(m)[0] for m in members) if isinstance(m, mi.StructType) and m.tag_field is not None
        ]
        if tagged and isinstance(v, dict):
            tag_field = tagged[0].tag_field
            by_tag = {m.tag: m for m in tagged}
            where = _key_path(path, tag_field)
            if tag_field not in v:
                return self.add(where, f"{where} is required ({one_of_text(by_tag)})", "missing_field")
            chosen = (
                by_tag.get(v[tag_field])
                if isinstance(v[tag_field], (str, int)) and not isinstance(v[tag_field], bool)
                else None
            )
            if chosen is None:
                return self.must(where, one_of_text(by_tag))
            return self._struct(chosen, v, path, tag_checked=True)
        candidates = [m for m in members if _kind_matches(m, v)]
        if not candidates:
            return self.must(path, expected(t))
        if len(candidates) > 1 and any(self.fits(m, v) for m in candidates):
            return
        self.visit(candidates[0], v, path)


def problems_of(obj: Any, type_: Any, *, limit: int = MAX_DETAILS) -> tuple[list[Problem], int]:
    """Every field of `obj` that keeps it from converting to `type_` (at most
    `limit` of them), and whether more were found (> 0). Empty when `obj` converts."""
    walk = _Walk(limit)
    walk.visit(_type_info(type_), obj, "")
    return walk.problems, walk.more
