"""Input validation shared by every front: JSON body -> typed tool input.

msgspec does the shape and limit checks; this module turns its messages into the
spec's error body (`details` = `[{field, message}]` with dotted/indexed paths).
"""
from __future__ import annotations

import re
from typing import Any

import msgspec

from .errors import ServiceError, invalid_request
from .json_depth import check_json_depth

_AT = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")


class FieldError(Exception):
    """Raised by a tool's own `check` for a semantically bad field."""

    def __init__(self, field: str, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.code = code


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def field_error_from_msgspec(exc: msgspec.ValidationError | msgspec.DecodeError) -> dict[str, str]:
    """`Expected int >= 1 - at $.items[0].qty` -> {field: 'items[0].qty', message: ...}."""
    text = str(exc)
    m = _AT.match(text)
    msg = (m.group("msg") if m else text).strip()
    raw_path = (m.group("path") if m else None) or "$"
    path = raw_path[1:].lstrip(".") if raw_path.startswith("$") else raw_path
    for pattern, fmt in ((_MISSING, "is required"), (_UNKNOWN, "is not an accepted field")):
        mm = pattern.match(msg)
        if mm:
            return {"field": _join(path, mm.group("name")), "message": f"{mm.group('name')} {fmt}"}
    return {"field": path or "$", "message": msg}


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


def convert(obj: Any, type_: Any) -> Any:
    """Convert builtins into `type_`, mapping failures to 400 invalid_request."""
    try:
        return msgspec.convert(obj, type_, strict=True)
    except msgspec.ValidationError as exc:
        detail = field_error_from_msgspec(exc)
        raise invalid_request(f"Invalid request: {detail['field']}: {detail['message']}", [detail]) from exc


def field_error(err: FieldError) -> ServiceError:
    return ServiceError(
        400, err.code, f"Invalid request: {err.field}: {err.message}", [{"field": err.field, "message": err.message}]
    )
