"""Input validation shared by every front: JSON body -> typed tool input.

msgspec converts (fast, and it stops at the first problem). Only when it
refuses does this module walk the target type beside the value, with
`msgspec.inspect`, to name *every* failing field in the error body of docs/api.md:
`details` = `[{field, message}]`, dotted/indexed paths (`items[2].size.kg`),
messages that say in words what is expected.
"""
from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import re
import uuid
from collections.abc import Iterable
from typing import Any, Literal

import msgspec
import msgspec.inspect as mi

from .errors import ServiceError, invalid_request
from .json_depth import check_json_depth

# A body can be wrong in thousands of places (a long list of bad items): the
# answer names this many and says how many more there are.
MAX_DETAILS = 100
_NAMED_IN_MESSAGE = 10

Kind = Literal["unknown_field", "missing_field", "bad_value"]


class FieldError(Exception):
    """Raised by a tool's own `check` for a semantically bad field."""

    def __init__(self, field: str, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.code = code


class FieldErrors(Exception):
    """Raised by a tool's own `check` that found several bad fields at once.
    The answer's `code` is the first error's."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = list(errors)
        if not self.errors:
            raise ValueError("FieldErrors needs at least one FieldError")
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in self.errors))


@dataclasses.dataclass(frozen=True)
class Problem:
    """One failing field of a body that did not convert."""

    field: str
    message: str
    kind: Kind = "bad_value"

    def detail(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


# -- wording --------------------------------------------------------------------------
def _num(x: Any) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _json(v: Any) -> str:
    return json.dumps(v.value if isinstance(v, enum.Enum) else v)


def _one_of(values: Iterable[Any]) -> str:
    shown = [_json(v) for v in values]
    if len(shown) <= 2:
        return " or ".join(shown)
    return "one of " + ", ".join(shown[:-1]) + " or " + shown[-1]


def _bounds(t: Any) -> str | None:
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


def _count(lo: int | None, hi: int | None, unit: str) -> str | None:
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
        return _of("a whole number", _bounds(t))
    if isinstance(t, mi.FloatType):
        return _of("a number", _bounds(t))
    if isinstance(t, mi.StrType):
        return _of("a string", _count(t.min_length, t.max_length, "characters"))
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return _of("a list", _count(t.min_length, t.max_length, "items"))
    if isinstance(t, mi.TupleType):
        return f"a list of exactly {len(t.item_types)} items"
    if isinstance(t, (mi.DictType, mi.StructType, mi.TypedDictType, mi.DataclassType)):
        return "an object"
    if isinstance(t, mi.LiteralType):
        return _one_of(t.values)
    if isinstance(t, mi.EnumType):
        return _one_of(t.cls)
    if isinstance(t, mi.UnionType):
        words = list(dict.fromkeys(expected(m) for m in t.types))
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    for kind, words in _SIMPLE.items():
        if isinstance(t, kind):
            return words
    return "a valid value"


# -- the walk ------------------------------------------------------------------------------
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
    if isinstance(t, (mi.StrType, mi.DateTimeType, mi.DateType, mi.TimeType, mi.UUIDType, mi.BytesType, mi.ByteArrayType)):
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
                self.must(path, _one_of(values))
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
            self.must(path, _bounds(t) or expected(t))

    def _string(self, t: mi.StrType, v: str, path: str, description: str | None) -> None:
        if (t.min_length is not None and len(v) < t.min_length) or (t.max_length is not None and len(v) > t.max_length):
            words = _count(t.min_length, t.max_length, "characters")
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
            words = _count(t.min_length, t.max_length, "items")
            self.add(path, f"{_subject(path)} must {'not be empty' if words == 'not empty' else 'have ' + str(words)}")
        for i, item in enumerate(v):
            if self.more:
                return
            self.visit(t.item_type, item, f"{path}[{i}]")

    def _dict(self, t: mi.DictType, v: dict[Any, Any], path: str) -> None:
        if (t.min_length is not None and len(v) < t.min_length) or (t.max_length is not None and len(v) > t.max_length):
            words = _count(t.min_length, t.max_length, "entries")
            self.add(path, f"{_subject(path)} must {'not be empty' if words == 'not empty' else 'have ' + str(words)}")
        key_type, _ = _unwrap(t.key_type)
        check_keys = isinstance(key_type, (mi.StrType, mi.LiteralType, mi.EnumType))
        for key, item in v.items():
            if self.more:
                return
            where = _key_path(path, str(key))
            if check_keys and not self.fits(t.key_type, key):
                self.add(where, f"{json.dumps(str(key))} is not an accepted key of {_subject(path)}: keys must be {expected(t.key_type)}")
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
                    self.must(where, _json(t.tag))
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
        tagged = [m for m in (_unwrap(m)[0] for m in members) if isinstance(m, mi.StructType) and m.tag_field is not None]
        if tagged and isinstance(v, dict):
            tag_field = tagged[0].tag_field
            by_tag = {m.tag: m for m in tagged}
            where = _key_path(path, tag_field)
            if tag_field not in v:
                return self.add(where, f"{where} is required ({_one_of(by_tag)})", "missing_field")
            chosen = by_tag.get(v[tag_field]) if isinstance(v[tag_field], (str, int)) and not isinstance(v[tag_field], bool) else None
            if chosen is None:
                return self.must(where, _one_of(by_tag))
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


# -- the errors ----------------------------------------------------------------------------
def _summary(fields: list[str], more: int, single: str) -> str:
    """`make must be ...`, `4 fields are invalid: a, b, c, d.`, or past the cap
    (the walk stops there) `More than 100 fields are invalid: a, ... and others.`"""
    if len(fields) == 1 and not more:
        return single if single.endswith(".") else single + "."
    named = fields[:_NAMED_IN_MESSAGE]
    if more:
        return f"More than {len(fields)} fields are invalid: {', '.join(named)} and others."
    rest = len(fields) - len(named)
    return f"{len(fields)} fields are invalid: {', '.join(named)}{f' and {rest} more' if rest else ''}."


def invalid_fields(problems: list[Problem], more: int = 0, *, error: str = "invalid_request") -> ServiceError:
    """400 naming every problem; with `error="invalid_input"` the body carries the
    first problem's `code` too (`unknown_field`, `missing_field` or `bad_value`)."""
    details = [p.detail() for p in problems]
    message = _summary([p.field for p in problems], more, problems[0].message)
    if error == "invalid_input":
        return ServiceError(400, "invalid_input", message, details, extra={"code": problems[0].kind})
    return invalid_request(message, details)


_AT = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.S)


def _from_msgspec(exc: msgspec.ValidationError) -> Problem:
    """Last resort, should the walk ever miss what msgspec refused: its own words, located."""
    m = _AT.match(str(exc))
    msg = (m.group("msg") if m else str(exc)).strip()
    raw = (m.group("path") if m else None) or "$"
    path = raw[1:].lstrip(".") if raw.startswith("$") else raw
    return Problem(path or "$", f"{path or 'the body'} is not valid ({msg})")


def decode_object(raw: bytes) -> dict[str, Any]:
    """Decode a JSON request body that must be an object (empty body = {})."""
    if not raw or not raw.strip():
        return {}
    check_json_depth(raw)  # before msgspec recurses into it
    try:
        obj = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise invalid_request("The request body is not valid JSON.", [{"field": "$", "message": str(exc)}]) from exc
    if not isinstance(obj, dict):
        raise invalid_request("The request body must be a JSON object.", [{"field": "$", "message": "expected an object"}])
    return obj


def convert(obj: Any, type_: Any, *, error: str = "invalid_request", also: Iterable[Problem] = ()) -> Any:
    """Convert builtins into `type_`; a refusal names every failing field (400 `error`).

    `also`: problems the caller found in fields it took out of `obj` first (listed
    first; alone they are a plain `invalid_request`)."""
    also = list(also)
    try:
        value = msgspec.convert(obj, type_, strict=True)
    except msgspec.ValidationError as exc:
        problems, more = problems_of(obj, type_)
        raise invalid_fields([*also, *(problems or [_from_msgspec(exc)])], more, error=error) from exc
    if also:
        raise invalid_fields(also)
    return value


def field_error(err: FieldError | FieldErrors) -> ServiceError:
    """The 400 of a tool's own check (one field, or several found together)."""
    if isinstance(err, FieldErrors):
        errors = err.errors
        details = [{"field": e.field, "message": e.message} for e in errors]
        if len(errors) > 1:
            return ServiceError(400, errors[0].code, _summary([e.field for e in errors], 0, ""), details)
        err = errors[0]
    return ServiceError(
        400, err.code, f"Invalid request: {err.field}: {err.message}", [{"field": err.field, "message": err.message}]
    )
