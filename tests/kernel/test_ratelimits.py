"""Rate limits (docs/limits.md): fixed windows per category and caller, counted
in memory (SQLite, one process) or in the database (PostgreSQL, any number of API
processes), on SQLite and on the machine's PostgreSQL. Times are pinned with
`now_ms`, so no assertion depends on the clock."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tollway._core.calls.ratelimits import (
    DEFAULT_LIMITS,
    RATE_LIMIT_TABLES,
    RateCounter,
    RateLimiter,
    RateState,
    caller_key,
    parse_limits,
)
from tollway._runtime.database import Database

T0 = 1_700_000_040_000  # a window start for 60-second windows (divisible by 60 000)


@pytest.fixture
async def kernel(kernel_factory):
    kernel = await kernel_factory()
    kernel.db.add_tables(RATE_LIMIT_TABLES)  # no-op once the kernel lists them itself
    await kernel.db.migrate()
    await RateCounter.delete(force=True)  # the PostgreSQL database is shared by the run's tests
    return kernel


@contextlib.asynccontextmanager
async def other_process(kernel: Any) -> AsyncIterator[Any]:
    """The engine a second API process would have: its own pool (PostgreSQL) or
    its own connection (SQLite) on the same database, without rebinding any table."""
    db = Database(kernel.db.url)
    if db.kind == "postgres":
        await db.engine.start_connection_pool(min_size=2, max_size=10)
    else:
        db.engine.raw_connection()
    try:
        yield db.engine
    finally:
        await db.close()


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "shared"])
async def test_exactly_limit_hits_per_window_then_429(kernel, shared):
    limiter = RateLimiter({"paid": (5, 60), "lookup": (300, 60)}, shared=shared)
    now = T0 + 12_345
    states = [await limiter.hit("paid", "agent:a", now_ms=now) for _ in range(5)]
    assert [s.allowed for s in states] == [True] * 5
    assert [s.remaining for s in states] == [4, 3, 2, 1, 0]
    assert {s.reset_s for s in states} == {48}  # ceil(47.655)
    assert states[0].headers() == {"RateLimit-Limit": "5", "RateLimit-Remaining": "4", "RateLimit-Reset": "48"}

    refused = await limiter.hit("paid", "agent:a", now_ms=now + 1_000)
    assert refused == RateState("paid", 5, 0, 47, False)
    again = await limiter.hit("paid", "agent:a", now_ms=now + 2_000)
    assert not again.allowed and again.remaining == 0

    error = refused.exceeded()
    assert error.status == 429 and error.code == "rate_limit_exceeded"
    body = error.body()
    assert body["error"] == "rate_limit_exceeded" and body["retry_after"] == 47 and body["message"]
    assert set(body) == {"error", "message", "retry_after"}
    assert error.headers == {
        "RateLimit-Limit": "5",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "47",
        "Retry-After": "47",
    }

    # other callers and other categories have counters of their own
    assert (await limiter.hit("paid", "agent:b", now_ms=now)).remaining == 4
    assert (await limiter.hit("lookup", "agent:a", now_ms=now)).remaining == 299

    # the next window starts afresh
    fresh = await limiter.hit("paid", "agent:a", now_ms=T0 + 60_000)
    assert fresh == RateState("paid", 5, 4, 60, True)
    last_ms = await limiter.hit("paid", "agent:a", now_ms=T0 + 119_999)
    assert last_ms.reset_s == 1 and last_ms.remaining == 3


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "shared"])
async def test_unknown_category_is_a_value_error(kernel, shared):
    limiter = RateLimiter(DEFAULT_LIMITS, shared=shared)
    with pytest.raises(ValueError, match="unknown rate-limit category 'nope'"):
        await limiter.hit("nope", "ip:1.2.3.4", now_ms=T0)


async def test_memory_and_shared_agree(kernel):
    limits = {"paid": (3, 60), "expensive": (2, 10), "free_read": (4, 1)}
    memory = RateLimiter(limits, shared=False)
    shared = RateLimiter(limits, shared=True)
    sequence = []
    for i in range(60):
        category = ("paid", "expensive", "free_read")[i % 3]
        key = f"agent:{i % 2}"
        sequence.append((category, key, T0 + i * 730))  # crosses 1 s, 10 s windows and one 60 s boundary
    for category, key, now in sequence:
        a = await memory.hit(category, key, now_ms=now)
        b = await shared.hit(category, key, now_ms=now)
        assert a == b, (category, key, now)
    assert sum(1 for category, _, _ in sequence if category == "free_read") == 20


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "shared"])
async def test_purge_drops_only_ended_windows(kernel, shared):
    limiter = RateLimiter({"paid": (60, 60), "expensive": (10, 120)}, shared=shared)
    for key in ("ip:1", "ip:2", "ip:3"):
        await limiter.hit("paid", key, now_ms=T0 + 5)
    await limiter.hit("expensive", "ip:1", now_ms=T0 + 5)  # a 120 s window: still live at T0 + 60 s
    if shared:
        assert await RateCounter.count() == 4
    assert await limiter.purge_expired(now_ms=T0 + 59_999) == 0
    assert await limiter.purge_expired(now_ms=T0 + 60_000) == 3
    if shared:
        assert await RateCounter.select(RateCounter.id).output(as_list=True) == [f"expensive:ip:1:{T0}"]
    # the live window kept its count; the ended ones start afresh
    assert (await limiter.hit("expensive", "ip:1", now_ms=T0 + 60_001)).remaining == 8
    assert (await limiter.hit("paid", "ip:2", now_ms=T0 + 60_001)).remaining == 59


async def test_shared_counter_rows_are_keyed_and_expire_with_the_window(kernel):
    limiter = RateLimiter({"expensive": (10, 60)}, shared=True)
    for _ in range(3):
        await limiter.hit("expensive", "token:abc", now_ms=T0 + 30_000)
    rows = await RateCounter.select()
    assert rows == [{"id": f"expensive:token:abc:{T0}", "hits": 3, "expires_ms": T0 + 60_000}]


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
@pytest.mark.postgres
async def test_twenty_clients_two_processes_exactly_the_limit_per_window(kernel):
    """20 concurrent clients against two API processes (two asyncpg pools on one
    PostgreSQL database, each with its own limiter): exactly the limit passes in
    each window and `Remaining` never goes below 0."""
    limit, hits_per_client = 60, 8  # 20 clients x 8 hits = 160 hits in each of two windows
    window_a, window_b = T0 + 1_000, T0 + 60_000 + 1_000
    async with other_process(kernel) as engine_a, other_process(kernel) as engine_b:
        processes = [RateLimiter({"paid": (limit, 60)}, shared=True, engine=e) for e in (engine_a, engine_b)]

        async def client(n: int) -> list[tuple[int, RateState]]:
            limiter = processes[n % 2]
            out = []
            for i in range(hits_per_client):
                now = window_a if (n + i) % 2 else window_b  # each client alternates windows
                out.append((now, await limiter.hit("paid", "agent:0xshared", now_ms=now)))
            return out

        results = [r for rs in await asyncio.gather(*[client(n) for n in range(20)]) for r in rs]

    for window in (window_a, window_b):
        states = [s for now, s in results if now == window]
        allowed = [s for s in states if s.allowed]
        assert len(states) == 80
        assert len(allowed) == limit
        # one atomic count per hit: the allowed ones saw each remaining value exactly once
        assert sorted(s.remaining for s in allowed) == list(range(limit))
        assert min(s.remaining for s in states) == 0
        assert all(s.remaining == 0 for s in states if not s.allowed)
    rows = await RateCounter.select().order_by(RateCounter.id)
    assert [r["hits"] for r in rows] == [80, 80]


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
@pytest.mark.postgres
async def test_two_processes_over_the_limit_refuse_the_surplus(kernel):
    """More concurrent hits than the limit in one window, across two pools:
    exactly `limit` pass, the rest are refused with Remaining 0."""
    limit = 25
    now = T0 + 42_000
    async with other_process(kernel) as engine_a, other_process(kernel) as engine_b:
        processes = [RateLimiter({"expensive": (limit, 60)}, shared=True, engine=e) for e in (engine_a, engine_b)]

        async def client(n: int) -> list[RateState]:
            return [await processes[n % 2].hit("expensive", "ip:10.0.0.7", now_ms=now) for _ in range(4)]

        states = [s for rs in await asyncio.gather(*[client(n) for n in range(20)]) for s in rs]
    assert len(states) == 80
    assert sum(s.allowed for s in states) == limit
    assert min(s.remaining for s in states) == 0
    assert sorted(s.remaining for s in states if s.allowed) == list(range(limit))
    refused = [s for s in states if not s.allowed]
    assert len(refused) == 80 - limit and {s.remaining for s in refused} == {0}
    assert {s.exceeded().extra["retry_after"] for s in refused} == {18}


# -- settings and keys (no database) ----------------------------------------------------
def test_parse_limits_defaults_and_overrides():
    assert (
        parse_limits({})
        == DEFAULT_LIMITS
        == {"paid": (60, 60), "expensive": (10, 60), "free_read": (120, 60), "lookup": (300, 60)}
    )
    env = {
        "TOLLWAY_RATE_LIMIT_PAID": "100/30",
        "TOLLWAY_RATE_LIMIT_EXPENSIVE": " 5 ",
        "TOLLWAY_RATE_LIMIT_LOOKUP": "",
        "TOLLWAY_NETWORK": "local",
    }
    assert parse_limits(env) == {"paid": (100, 30), "expensive": (5, 60), "free_read": (120, 60), "lookup": (300, 60)}


@pytest.mark.parametrize(
    "value, message",
    [
        ("ten", "TOLLWAY_RATE_LIMIT_PAID must be '<limit>/<window seconds>'"),
        ("10/", "TOLLWAY_RATE_LIMIT_PAID must be"),
        ("10/1m", "TOLLWAY_RATE_LIMIT_PAID must be"),
        ("0/60", "the limit must be from 1"),
        ("-3", "the limit must be from 1"),
        ("10/0", "the window must be from 1 to 86400 seconds"),
        ("10/86401", "the window must be from 1 to 86400 seconds"),
    ],
)
def test_parse_limits_refuses_bad_values(value, message):
    with pytest.raises(ValueError, match=message):
        parse_limits({"TOLLWAY_RATE_LIMIT_PAID": value})


def test_parse_limits_refuses_unknown_categories():
    with pytest.raises(ValueError, match="TOLLWAY_RATE_LIMIT_PAYED names no rate-limit category"):
        parse_limits({"TOLLWAY_RATE_LIMIT_PAYED": "10"})


def test_limiter_refuses_bad_limits():
    with pytest.raises(ValueError):
        RateLimiter({"paid": (0, 60)}, shared=False)


def test_caller_key_is_the_proven_identity_else_the_ip():
    wallet = "wallet:0xabcdef0000000000000000000000000000000001"
    assert caller_key(wallet, "1.2.3.4") == wallet
    assert (
        caller_key("agent:5f0e0000-0000-4000-8000-000000000000", None) == "agent:5f0e0000-0000-4000-8000-000000000000"
    )
    assert caller_key(None, "2001:db8::1") == "ip:2001:db8::1"
    assert caller_key("", "9.9.9.9") == "ip:9.9.9.9"
    assert caller_key(None, None) == "ip:unknown"
    key = caller_key("x" * 500, None)
    assert key.startswith("key#") and len(key) < 64
