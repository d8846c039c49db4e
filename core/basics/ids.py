"""Identifier and clock helpers shared by the kernel."""

from __future__ import annotations

import datetime as _dt
import os
import time
import uuid


def new_id(prefix: str) -> str:
    """`rcpt_3f…` style ids: prefix + 24 hex chars of randomness (the operating system's,
    as `secrets.token_hex` takes it, without its layers: a paid call makes three)."""
    return f"{prefix}_{os.urandom(12).hex()}"


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


# The last second `iso` formatted and its text up to the milliseconds: a receipt writes two
# times of one millisecond, and a busy process many of one second.
_last_second: tuple[int, str] = (0, "1970-01-01T00:00:00.")


def iso(ms: int) -> str:
    """Unix milliseconds -> ISO 8601 UTC with milliseconds and a Z."""
    global _last_second
    second, milli = divmod(ms, 1000)
    last = _last_second
    if last[0] != second:
        last = _last_second = (second, _dt.datetime.fromtimestamp(second, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    return f"{last[1]}{milli:03d}Z"


def parse_iso_ms(text: str) -> int:
    """ISO 8601 date or date-time (naive = UTC) -> unix milliseconds."""
    t = text.strip()
    if t.endswith("Z") or t.endswith("z"):
        t = t[:-1] + "+00:00"
    dt = _dt.datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    return int(dt.timestamp() * 1000)
