"""Readers of the loosely typed values public registries send in JSON: numbers
written as strings, blank strings for "no value", nulls (public as `tollway.source_text`
and `tollway.source_int`)."""

from __future__ import annotations


def source_text(value: object) -> str | None:
    """A value as trimmed text: numbers written out, None for null, booleans,
    containers and blank strings."""
    if type(value) is str:  # what registries send most: one test instead of three
        return value.strip() or None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        return None
    return value.strip() or None


def source_int(value: object) -> int | None:
    """A whole number given as an int, a whole float or a string of digits; else None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
