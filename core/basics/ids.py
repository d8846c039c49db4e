"""Identifier and clock helpers shared by the kernel."""

from __future__ import annotations

import datetime as _dt
import secrets
import time
import uuid


def new_id(prefix: str) -> str:
    """`rcpt_3f…` style ids: prefix + 24 hex chars of randomness."""
    return f"{prefix}_{secrets.token_hex(12)}"


def new_uuid() -> str:
    return str(uuid.uuid4())


def now_ms() -> int:
    return time.time_ns() // 1_000_000


_last_us = 0


def monotonic_us() -> int:
    """Unix microseconds, strictly increasing within this process (an ordering
    tiebreak for rows written in the same millisecond)."""
    global _last_us
    _last_us = max(time.time_ns() // 1000, _last_us + 1)
    return _last_us


def iso(ms: int) -> str:
    """Unix milliseconds -> ISO 8601 UTC with milliseconds and a Z."""
    dt = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_iso_ms(text: str) -> int:
    """ISO 8601 date or date-time (naive = UTC) -> unix milliseconds."""
    t = text.strip()
    if t.endswith("Z") or t.endswith("z"):
        t = t[:-1] + "+00:00"
    dt = _dt.datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    return int(dt.timestamp() * 1000)
