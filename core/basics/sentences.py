"""The first sentence of a description, for compact listings (MCP tools/list)."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)`'\"][.!?])\s+(?=[A-Z`])")


def first_sentence(text: str) -> str:
    """The first sentence of `text` (an end mark after a lower-case letter, digit or
    closing mark, then a space and a capital): "e.g. X" and "U.S. Treasury" stay whole."""
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
