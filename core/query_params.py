"""Query-string parameters of plugin routes (`tollway.query_int`, `tollway.query_flag`): a
whole number within a range, or a boolean, each refused with 400 `invalid_request` naming
the parameter; absent or empty gives the default."""
from __future__ import annotations

import re
from collections.abc import Mapping

from .errors import Refusal

_WHOLE = re.compile(r"[0-9]{1,12}")
_FLAGS = {"true": True, "1": True, "false": False, "0": False}


def query_int(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """`name` as a whole number from `low` to `high` (`?limit=20`)."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if not _WHOLE.fullmatch(raw) or not low <= int(raw) <= high:
        raise Refusal("invalid_request", f"{name} must be a whole number from {low} to {high}.", details=[{"field": name, "message": f"{low} to {high}"}])
    return int(raw)


def query_flag(query: Mapping[str, str], name: str, default: bool = False) -> bool:
    """`name` as a boolean: true, false, 1 or 0 (any case)."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() not in _FLAGS:
        raise Refusal("invalid_request", f"{name} must be true or false.", details=[{"field": name, "message": "expected a boolean"}])
    return _FLAGS[raw.lower()]


__all__ = ["query_flag", "query_int"]
