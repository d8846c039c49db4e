"""Fixed-window rate limits per category and caller (docs/limits.md).

Every limited route belongs to one category (`paid`, `expensive`, `free_read`,
`lookup`); a tool names its category in `Tool.rate_limit`. A caller is a proven
identity (a valid agent proof, an access token or a signed payment, resolved by
`core.rate_identity`), or else the client's IP address (`caller_key`). A bare
`X-Agent-ID` proves nothing and is counted by IP.

Counting is a fixed window: the window of a hit is `now // window`, and the
counter of (category, caller, window) is one row keyed
`"<category>:<caller key>:<window start ms>"`.

* `shared=True` (PostgreSQL, any number of API processes): each hit is ONE
  atomic statement, `INSERT … ON CONFLICT (id) DO UPDATE SET hits = hits + 1
  RETURNING hits`, so every process sees the same count and exactly `limit`
  hits pass per window however many processes race.
* `shared=False` (SQLite, one process): the same arithmetic in a dict.

A refused hit still counts (the counter only grows), so `Remaining` is
`max(0, limit - hits)` and never goes below 0.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping
from typing import Any

from piccolo.columns import BigInt, Integer, Varchar
from piccolo.table import Table

from tollway._core.basics.errors import ServiceError
from tollway._core.storage import sql
from tollway._core.storage.tables import PLACEHOLDER_ENGINE

DEFAULT_LIMITS: dict[str, tuple[int, int]] = {
    "paid": (60, 60),
    "expensive": (10, 60),
    "free_read": (120, 60),
    "lookup": (300, 60),
}
SETTING_PREFIX = "TOLLWAY_RATE_LIMIT_"
MAX_LIMIT = 10_000_000
MAX_WINDOW_S = 86_400
_KEY_MAX = 100  # longer caller keys are hashed, so a row id stays bounded


class RateCounter(Table, tablename="tw_rate_counters", db=PLACEHOLDER_ENGINE):
    """One fixed window of one category for one caller.

    The count column is `hits`, not `count`: a column named `count` would hide
    Piccolo's `Table.count()`.
    """

    id = Varchar(length=255, primary_key=True)  # "<category>:<caller key>:<window start ms>"
    hits = Integer(default=0)
    expires_ms = BigInt(index=True)  # the window's end; purged after it


RATE_LIMIT_TABLES: tuple[type[Table], ...] = (RateCounter,)

_HIT = (
    "INSERT INTO tw_rate_counters (id, hits, expires_ms) VALUES ({}, 1, {}) "
    "ON CONFLICT (id) DO UPDATE SET hits = tw_rate_counters.hits + 1 "
    "RETURNING hits"
)
_PURGE = "DELETE FROM tw_rate_counters WHERE expires_ms <= {}"
_PURGE_RETURNING = "DELETE FROM tw_rate_counters WHERE expires_ms <= {} RETURNING id"


# -- settings -----------------------------------------------------------------------
def _parse_one(name: str, text: str) -> tuple[int, int]:
    raw = text.strip()
    limit_text, sep, window_text = raw.partition("/")
    if not sep:
        window_text = "60"
    try:
        limit, window = int(limit_text.strip()), int(window_text.strip())
    except ValueError:
        raise ValueError(
            f"{name} must be '<limit>/<window seconds>' or '<limit>' (e.g. '60/60'), not {text!r}"
        ) from None
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"{name}: the limit must be from 1 to {MAX_LIMIT}, not {limit}")
    if not 1 <= window <= MAX_WINDOW_S:
        raise ValueError(f"{name}: the window must be from 1 to {MAX_WINDOW_S} seconds, not {window}")
    return limit, window


def parse_limits(env: Mapping[str, str]) -> dict[str, tuple[int, int]]:
    """The limits: DEFAULT_LIMITS overridden by `TOLLWAY_RATE_LIMIT_<CATEGORY>`
    (`"<limit>/<window seconds>"` or `"<limit>"` for a 60-second window).

    An empty value keeps the default; an unknown category or a malformed value
    is a ValueError naming the setting.
    """
    limits = dict(DEFAULT_LIMITS)
    for name, value in env.items():
        if not name.startswith(SETTING_PREFIX):
            continue
        category = name[len(SETTING_PREFIX) :].lower()
        if category not in DEFAULT_LIMITS:
            known = ", ".join(SETTING_PREFIX + c.upper() for c in DEFAULT_LIMITS)
            raise ValueError(f"{name} names no rate-limit category; known settings: {known}")
        if value is None or not value.strip():
            continue
        limits[category] = _parse_one(name, value)
    return limits


# -- state ---------------------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class RateState:
    """The outcome of one hit: what the `RateLimit-*` headers say. Made once per request and
    never changed (not frozen: a frozen dataclass takes four times as long to make)."""

    category: str
    limit: int
    remaining: int
    reset_s: int  # whole seconds until the window resets, >= 1
    allowed: bool

    def headers(self) -> dict[str, str]:
        """`RateLimit-*` headers: on every response of a limited route, errors included."""
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_s),
        }

    def exceeded(self) -> ServiceError:
        """The 429 `rate_limit_exceeded` refusal: body `{error, message, retry_after}`."""
        headers = self.headers()
        headers["Retry-After"] = str(self.reset_s)
        return ServiceError(
            429,
            "rate_limit_exceeded",
            f"Rate limit exceeded: at most {self.limit} {self.category} requests per window; "
            f"retry after {self.reset_s} seconds.",
            extra={"retry_after": self.reset_s},
            headers=headers,
        )


def caller_key(identity: str | None, client_ip: str | None) -> str:
    """Who a limit counts against: the proven `identity` (`wallet:<address>` or
    `agent:<id>`), else `ip:<client ip>`. Over-long values are hashed, so a row id
    stays bounded."""
    key = identity if identity else "ip:" + (client_ip or "unknown")
    if len(key) > _KEY_MAX or not key.isprintable():
        return "key#" + hashlib.sha256(key.encode()).hexdigest()[:32]
    return key


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class RateLimiter:
    """Counts hits per (category, caller, window).

    `limits` maps category -> (limit, window seconds), as `parse_limits` returns.
    `engine` is the Piccolo engine of the shared counters; by default the one
    `RateCounter` is bound to (tests pass another to act as a second process).
    """

    def __init__(self, limits: Mapping[str, tuple[int, int]], *, shared: bool, engine: Any = None) -> None:
        self.limits: dict[str, tuple[int, int]] = {}
        for category, pair in limits.items():
            limit, window = pair
            if not (isinstance(limit, int) and isinstance(window, int) and limit >= 1 and window >= 1):
                raise ValueError(f"rate limit {category!r}: expected (limit >= 1, window seconds >= 1), got {pair!r}")
            self.limits[category] = (limit, window)
        self.shared = shared
        self._engine = engine
        self._windows: dict[str, tuple[int, int]] = {}  # "<category>:<caller>" -> (window end ms, hits)
        self._sweep_at = 0

    def _bound_engine(self) -> Any:
        engine = self._engine or RateCounter._meta.db
        if engine is PLACEHOLDER_ENGINE:
            raise RuntimeError("RateCounter is not bound: add core.ratelimits.RATE_LIMIT_TABLES to the Database")
        return engine

    async def hit(self, category: str, key: str, now_ms: int | None = None) -> RateState:
        """Count one request of `key` in `category`; `allowed` says whether it passes."""
        try:
            limit, window_s = self.limits[category]
        except KeyError:
            raise ValueError(f"unknown rate-limit category {category!r}; known: {sorted(self.limits)}") from None
        now = _now_ms() if now_ms is None else now_ms
        window_ms = window_s * 1000
        start = now - now % window_ms
        end = start + window_ms
        if self.shared:
            rows = await sql.run(self._bound_engine(), _HIT, (f"{category}:{key}:{start}", end))
            hits = int(rows[0]["hits"])
        else:
            hits = self._hit_memory(f"{category}:{key}", end, now)
        reset_s = max(1, -(-(end - now) // 1000))
        return RateState(category, limit, max(0, limit - hits), reset_s, hits <= limit)

    def _hit_memory(self, slot: str, end: int, now: int) -> int:
        if now >= self._sweep_at:  # drop windows that have ended, at most once a second
            self._drop_ended(now)
            self._sweep_at = now + 1000
        current = self._windows.get(slot)
        hits = current[1] + 1 if current is not None and current[0] == end else 1
        self._windows[slot] = (end, hits)
        return hits

    def _drop_ended(self, now: int) -> int:
        ended = [slot for slot, (end, _) in self._windows.items() if end <= now]
        for slot in ended:
            del self._windows[slot]
        return len(ended)

    async def purge_expired(self, now_ms: int | None = None) -> int:
        """Delete the counters of windows that have ended; returns how many went
        (the shared count is the database's, when the engine reports it, else 0)."""
        now = _now_ms() if now_ms is None else now_ms
        if not self.shared:
            return self._drop_ended(now)
        rows = await sql.run(self._bound_engine(), _PURGE_RETURNING, (now,))
        return len(rows)


__all__ = [
    "DEFAULT_LIMITS",
    "RATE_LIMIT_TABLES",
    "RateCounter",
    "RateLimiter",
    "RateState",
    "caller_key",
    "parse_limits",
]
