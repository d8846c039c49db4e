"""Identifier and clock helpers shared by the kernel."""

from __future__ import annotations

import collections
import datetime as _dt
import os
import time
import uuid


def new_id(prefix: str) -> str:
    """`rcpt_3f…` style ids: prefix + 24 hex chars of randomness (the operating system's,
    as `secrets.token_hex` takes it, without its layers: a paid call makes three)."""
    return f"{prefix}_{os.urandom(12).hex()}"


# The operating system's randomness for `sorted_id`, drawn a block at a time (one system call
# per 157 ids, not one each) and cut into 13-hex-digit pieces; a deque's pop is atomic, so
# threads never share a piece, and a forked child drops what its parent drew.
_RANDOM_PIECES: collections.deque[str] = collections.deque()
_RANDOM_BLOCK = 1024  # bytes: 2,048 hex digits, 157 pieces
os.register_at_fork(after_in_child=_RANDOM_PIECES.clear)
_last_ms: tuple[int, str] = (-1, "")  # the millisecond `sorted_id` wrote last, in hex


def _random_piece() -> str:
    while True:
        try:
            return _RANDOM_PIECES.pop()
        except IndexError:
            digits = os.urandom(_RANDOM_BLOCK).hex()
            _RANDOM_PIECES.extend(digits[at : at + 13] for at in range(0, len(digits) - 12, 13))


def sorted_id(prefix: str) -> str:
    """`rcpt_019a…` style ids whose text sorts in creation order: prefix + 24 hex chars, the
    unix milliseconds (11 hex digits, until the year 2527) then 13 of randomness (52 bits).
    For the keys a paid call inserts (ledger rows, requests, receipts): each index on one
    takes its new entries at its right edge, so concurrent calls share the leaf page a
    group commit writes, where random keys write a page of each index per call."""
    global _last_ms
    ms = time.time_ns() // 1_000_000
    last = _last_ms
    if last[0] != ms:
        last = _last_ms = (ms, format(ms, "011x"))
    return prefix + "_" + last[1] + _random_piece()


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


# The seconds `iso` formatted lately, each with its text up to the milliseconds: a paid call
# writes its receipt's times and its evidence's (an upstream answer's, from a cache, an
# older second), and a busy process many of one second.
_SECONDS: dict[int, str] = {}
_SECONDS_KEPT = 256


def iso(ms: int) -> str:
    """Unix milliseconds -> ISO 8601 UTC with milliseconds and a Z."""
    second, milli = divmod(ms, 1000)
    text = _SECONDS.get(second)
    if text is None:
        if len(_SECONDS) >= _SECONDS_KEPT:
            _SECONDS.clear()
        text = _SECONDS[second] = _dt.datetime.fromtimestamp(second, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.")
    return f"{text}{milli:03d}Z"


def parse_iso_ms(text: str) -> int:
    """ISO 8601 date or date-time (naive = UTC) -> unix milliseconds."""
    t = text.strip()
    if t.endswith("Z") or t.endswith("z"):
        t = t[:-1] + "+00:00"
    dt = _dt.datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    return int(dt.timestamp() * 1000)
