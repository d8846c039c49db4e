"""Entity keys: the forms of a key a read tries (as written, then in capitals), and the
key of a search recorded by input, the SHA-256 hex of its normalised input (the
validated input, defaults filled in, audit fields left out, as RFC 8785 canonical
JSON), so the input itself is never stored."""

from __future__ import annotations

import hashlib

import msgspec
import rfc8785


def search_key(validated_input: msgspec.Struct) -> str:
    """The key of a search called with `validated_input` (a tool's input Struct)."""
    plain = msgspec.to_builtins(validated_input)
    return hashlib.sha256(rfc8785.dumps(plain)).hexdigest()


def key_forms(key: str) -> tuple[str, ...]:
    """The forms of an entity key a read tries, in order: as written, then in capitals
    (entity keys are recorded in capitals: a VIN, `MAKE|MODEL|YEAR`). Changes and
    Benchmark both read keys through it."""
    return tuple(dict.fromkeys((key, key.upper())))
