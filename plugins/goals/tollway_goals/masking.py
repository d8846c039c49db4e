"""Secrets never stored or logged: known token shapes in a session's steps and log lines
are replaced by `***` (repository tokens, webhook secrets, access tokens, API keys)."""

from __future__ import annotations

import re
from typing import Any

_SECRET = re.compile(
    r"(gh[pousr]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,}|whsec_[A-Za-z0-9_-]{20,}|tw_at_[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
)
MASK = "***"


def mask_text(text: str, extra: tuple[str, ...] = ()) -> str:
    for secret in extra:
        if secret:
            text = text.replace(secret, MASK)
    return _SECRET.sub(MASK, text)


def mask(value: Any, extra: tuple[str, ...] = ()) -> Any:
    """`value` with every secret-shaped string (and each of `extra`) masked, at any depth."""
    if isinstance(value, str):
        return mask_text(value, extra)
    if isinstance(value, dict):
        return {k: mask(v, extra) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, extra) for v in value]
    return value
