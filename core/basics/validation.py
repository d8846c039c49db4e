"""Input validation shared by every front: JSON body -> typed tool input.

msgspec converts (fast, and it stops at the first problem). Only when it
refuses does core/basics/input_problems.py walk the target type beside the value, with
`msgspec.inspect`, to name *every* failing field in the error body of docs/api.md:
`details` = `[{field, message}]`, dotted/indexed paths (`items[2].size.kg`),
messages that say in words what is expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from tollway._core.basics.errors import ServiceError, invalid_request
from tollway._core.basics.input_problems import MAX_DETAILS, Kind, Problem, problems_of  # noqa: F401  (part of this module's API)
from tollway._core.basics.json_depth import check_json_depth

_NAMED_IN_MESSAGE = 10


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
        raise invalid_request(
            "The request body must be a JSON object.", [{"field": "$", "message": "expected an object"}]
        )
    return obj


def one_of_problems(obj: Any, groups: Iterable[tuple[str, ...]]) -> list[Problem]:
    """A problem for each field of each group of which `obj` gives not exactly one."""
    problems = []
    for group in groups:
        if isinstance(obj, dict) and sum(obj.get(name) is not None for name in group) != 1:
            problems += [Problem(name, f"give exactly one of {' and '.join(group)}") for name in group]
    return problems


def convert(
    obj: Any,
    type_: Any,
    *,
    error: str = "invalid_request",
    also: Iterable[Problem] = (),
    besides: Iterable[Problem] = (),
) -> Any:
    """Convert builtins into `type_`; a refusal names every failing field (400 `error`).

    `also`: problems the caller found in fields it took out of `obj` first (listed
    first; alone they are a plain `invalid_request`). `besides`: problems of rules
    across fields that a later check reports when the conversion succeeds; named after
    the conversion's own when it fails, so one 400 still names every failing field."""
    also = list(also)
    try:
        value = msgspec.convert(obj, type_, strict=True)
    except msgspec.ValidationError as exc:
        problems, more = problems_of(obj, type_)
        found = problems or [_from_msgspec(exc)]
        named = {p.field for p in found}
        found += [p for p in besides if p.field not in named]
        raise invalid_fields([*also, *found], more, error=error) from exc
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
