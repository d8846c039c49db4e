"""Ids and times of the goals plugin: a goal's id follows from its compute request's id."""

from __future__ import annotations

import itertools
import secrets
import time

from tollway import iso, now_ms

__all__ = ["goal_id_for", "iso", "new_id", "next_seq", "now_ms"]

_counter = itertools.count()


def goal_id_for(request_id: str) -> str:
    """`req_3f…` -> `goal_3f…`: the 202 names the goal before any worker has run."""
    return "goal_" + request_id.split("_", 1)[-1]


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def ordered_id(prefix: str) -> str:
    """An id whose text sorts in creation order (a time-ordered step number, then randomness)."""
    return f"{prefix}_{next_seq():017x}{secrets.token_hex(4)}"


def next_seq() -> int:
    """A step number ordered by time across processes: microseconds, then a per-process
    counter and randomness in the low digits (the unique index catches the rare tie)."""
    return time.time_ns() // 1000 * 1000 + (next(_counter) * 7 + secrets.randbelow(7)) % 1000
