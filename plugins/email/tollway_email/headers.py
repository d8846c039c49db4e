"""What may become a mail header: one line of text, without any character Python's
str.splitlines() or header folding breaks a line at (CR, LF, VT, FF, the file, group and
record separators, NEL, U+2028, U+2029) nor any other control character (NUL, tab, DEL, C1)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tollway import Refusal

# Unicode's controls (Cc: U+0000-U+001F, U+007F-U+009F, NEL among them), the line separator
# (Zl) and the paragraph separator (Zp): every line break str.splitlines() knows is one of them.
_NOT_IN_A_HEADER = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def problem(value: str) -> str | None:
    """Why `value` cannot be a header's text, or None when it can."""
    found = _NOT_IN_A_HEADER.search(value)
    return None if found is None else f"must be one line without control characters (it has U+{ord(found.group()):04X})"


def problems(fields: Iterable[tuple[str, str | None]]) -> list[dict[str, str]]:
    """`{field, message}` of each (field, value) that cannot be a header's text (None: not given)."""
    return [
        {"field": name, "message": why}
        for name, value in fields
        if value is not None and (why := problem(value)) is not None
    ]


def refuse_bad(fields: Iterable[tuple[str, str]]) -> None:
    """Refuse (400 `invalid_request`, every bad field named) when a (field, value) cannot be a header."""
    details = problems(fields)
    if len(details) == 1:
        raise Refusal(
            "invalid_request", f"Invalid request: {details[0]['field']}: {details[0]['message']}", details=details
        )
    if details:
        raise Refusal(
            "invalid_request",
            f"{len(details)} fields are invalid: {', '.join(d['field'] for d in details)}.",
            details=details,
        )
