"""How deeply a JSON text may nest, checked before any decoder sees it, and the
interpreter recursion limit that backs the check up (docs/limits.md)."""

from __future__ import annotations

import contextlib
import sys
from itertools import accumulate

from tollway._core.basics.errors import ServiceError, invalid_request

MAX_JSON_DEPTH = 64  # arrays and objects inside each other; no tool input comes close
RECURSION_LIMIT = 1000  # CPython's default: C decoders stop with RecursionError long before the C stack ends

_OPENERS = (b"[", b"{")
_KEEP_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")  # the bytes `translate` deletes
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(raw: bytes | str) -> int:
    """The deepest nesting of arrays and objects in `raw`, brackets inside strings ignored.

    Linear and in C but for one pass over the brackets: escapes are dropped first
    (a run of backslashes pairs off exactly as JSON reads it, so what is left of a
    `\\"` is gone too), then every other quote-delimited piece is a string's inside.
    Meant for JSON; on other text the answer is an upper bound of sorts, never a crash.
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside_strings = b"".join(unescaped.split(b'"')[::2])
    brackets = outside_strings.translate(None, _KEEP_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def json_too_deep(raw: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when `raw` nests deeper than `limit`. A text with at most `limit`
    opening brackets cannot, so ordinary bodies cost two `count` calls."""
    if isinstance(raw, str):
        if raw.count("[") + raw.count("{") <= limit:
            return False
    elif raw.count(_OPENERS[0]) + raw.count(_OPENERS[1]) <= limit:
        return False
    return json_depth(raw) > limit


def too_deep_error(limit: int = MAX_JSON_DEPTH, field: str = "$") -> ServiceError:
    """400 `invalid_request` for a JSON text nested deeper than `limit`."""
    return invalid_request(
        f"The JSON is nested deeper than {limit} levels of arrays and objects.",
        [{"field": field, "message": f"nested deeper than {limit} levels"}],
    )


def check_json_depth(raw: bytes | str, limit: int = MAX_JSON_DEPTH, field: str = "$") -> None:
    """Refuse (400 `invalid_request`) a JSON text nested deeper than `limit`, before decoding it."""
    if json_too_deep(raw, limit):
        raise too_deep_error(limit, field)


def pin_recursion_limit() -> None:
    """Undo the recursion limit of 100,000 that py_ecc (imported by eth-account)
    sets at import: with it, a deeply nested JSON text overflows the C stack in
    msgspec's or the json module's decoder and the process dies. py_ecc is
    imported here first so its import cannot raise the limit again later."""
    with contextlib.suppress(ImportError):
        import py_ecc  # noqa: F401
    if sys.getrecursionlimit() > RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


__all__ = [
    "MAX_JSON_DEPTH",
    "RECURSION_LIMIT",
    "check_json_depth",
    "json_depth",
    "json_too_deep",
    "pin_recursion_limit",
    "too_deep_error",
]
