"""RFC 8785 canonical JSON, fast: msgspec's sorted-key encoding is byte-identical to it for
integers within ±(2^53-1), floats that both write in plain positional form (no exponent,
not a whole number: `0.85`), and keys of the Basic Multilingual Plane (where code point
order is UTF-16 order); anything else goes through `rfc8785`. Receipts, idempotency bodies
and recorded facts are canonicalised here."""

from __future__ import annotations

from typing import Any

import msgspec
import rfc8785

_SORTED = msgspec.json.Encoder(order="sorted")
_SAFE_INT = 2**53 - 1
_ASTRAL = "\U00010000"


def _text_ok(text: str, *, key: bool) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")  # a lone surrogate cannot be written: RFC 8785 refuses it
    except UnicodeEncodeError:
        return False
    return not key or max(text) < _ASTRAL


def _plain(value: Any) -> bool:
    """Whether msgspec's sorted encoding of `value` is its RFC 8785 form. The common members
    of a container (ASCII text, None, booleans, safe integers) are checked inline, without a
    call each: a receipt has some thirty."""
    kind = type(value)
    if kind is dict:
        for key, member in value.items():
            if type(key) is not str or not (key.isascii() or _text_ok(key, key=True)):
                return False
            # `_plain_member`, written out: a receipt's members take no call each
            member_kind = type(member)
            if member_kind is str:
                if not (member.isascii() or _text_ok(member, key=False)):
                    return False
            elif member is None or member_kind is bool:
                continue
            elif member_kind is int:
                if not -_SAFE_INT <= member <= _SAFE_INT:
                    return False
            elif not _plain(member):
                return False
        return True
    if kind is list or kind is tuple:
        return all(_plain_member(member) for member in value)
    return _plain_scalar(value, kind)


def _plain_member(member: Any) -> bool:
    kind = type(member)
    if kind is str:
        return member.isascii() or _text_ok(member, key=False)
    if member is None or kind is bool:
        return True
    if kind is int:
        return -_SAFE_INT <= member <= _SAFE_INT
    return _plain(member)


def _plain_scalar(value: Any, kind: type) -> bool:
    if kind is str:
        return _text_ok(value, key=False)
    if kind is bool or value is None:
        return True
    if kind is int:
        return -_SAFE_INT <= value <= _SAFE_INT
    if kind is float:
        # ECMAScript writes a whole number without ".0" and switches to exponents at other
        # bounds than Python: only the plain shortest positional form is the same in both.
        text = repr(value)
        return "e" not in text and "n" not in text and not value.is_integer() and _SORTED.encode(value) == text.encode()
    return False  # anything else (rfc8785 decides: it may refuse)


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of a JSON-able value."""
    if _plain(value):
        return _SORTED.encode(value)
    return rfc8785.dumps(value)
