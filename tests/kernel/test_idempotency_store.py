"""Idempotency-Key records on SQLite and on the machine's PostgreSQL: new, replay,
reused key with another body (422), in progress (409), abandon, expiry, lease
takeover, and 30 concurrent claims of one key. Times are pinned with `now_ms`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tollway._core.basics.errors import ServiceError
from tollway._core.calls.idempotency import (
    IDEMPOTENCY_TABLES,
    Begin,
    IdempotencyRecord,
    IdempotencyStore,
    check_key,
    hash_body,
    missing_key,
    parse_settings,
    record_id,
)
from tollway._runtime.database import Database

T0 = 1_700_000_000_000
SCOPE = "echo_words:0f3c9a1e-0000-4000-8000-000000000001"
H1 = hash_body(b'{"text": "one"}')
H2 = hash_body(b'{"text": "two"}')
ANSWER = {
    "success": True,
    "data": {"request_id": "req_1", "receipt_id": "rcp_1", "status": "completed", "n": [1, 2.5, None]},
}
HEADERS = {"PAYMENT-RESPONSE": "eyJzdWNjZXNzIjp0cnVlfQ==", "X-Other": "v"}


@pytest.fixture
async def kernel(kernel_factory):
    kernel = await kernel_factory()
    kernel.db.add_tables(IDEMPOTENCY_TABLES)  # no-op once the kernel lists them itself
    await kernel.db.migrate()
    await IdempotencyRecord.delete(force=True)  # the PostgreSQL database is shared by the run's tests
    return kernel


@pytest.fixture
def store(kernel) -> IdempotencyStore:
    return IdempotencyStore(ttl_s=86_400, running_lease_s=60)


@contextlib.asynccontextmanager
async def other_process(kernel: Any) -> AsyncIterator[Any]:
    """The engine of a second process on the same database (own pool / connection)."""
    db = Database(kernel.db.url)
    if db.kind == "postgres":
        await db.engine.start_connection_pool(min_size=2, max_size=20)
    else:
        db.engine.raw_connection()
    try:
        yield db.engine
    finally:
        await db.close()


async def refused(coro: Any) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        await coro
    return info.value


async def test_new_then_finish_then_identical_replay(store):
    first = await store.begin(SCOPE, "key-1", H1, now_ms=T0)
    assert first.kind == "new" and first.token
    assert await store.finish(first.token, 200, ANSWER, HEADERS, now_ms=T0 + 500)
    again = await store.begin(SCOPE, "key-1", H1, now_ms=T0 + 1_000)
    assert again == Begin("replay", status=200, body=ANSWER, headers=HEADERS)
    assert await store.begin(SCOPE, "key-1", H1, now_ms=T0 + 86_000_000) == again
    # a finished record cannot be finished twice
    assert not await store.finish(first.token, 500, {"error": "x"}, {}, now_ms=T0 + 2_000)
    row = await IdempotencyRecord.select().where(IdempotencyRecord.id == record_id(SCOPE, "key-1")).first()
    assert row["state"] == "done" and row["scope"] == SCOPE and row["body_hash"] == H1
    assert row["expires_ms"] == T0 + 500 + 86_400_000


async def test_errors_after_execution_are_replayed_too(store):
    first = await store.begin(SCOPE, "key-err", H1, now_ms=T0)
    error = {
        "error": "internal_error",
        "message": "The call failed (ref: req_9).",
        "request_id": "req_9",
        "receipt_id": "rcp_9",
    }
    await store.finish(first.token, 500, error, {}, now_ms=T0)
    replay = await store.begin(SCOPE, "key-err", H1, now_ms=T0 + 1)
    assert (replay.kind, replay.status, replay.body, replay.headers) == ("replay", 500, error, {})


async def test_same_key_other_body_is_422_running_or_done(store):
    first = await store.begin(SCOPE, "key-2", H1, now_ms=T0)
    while_running = await refused(store.begin(SCOPE, "key-2", H2, now_ms=T0 + 1))
    await store.finish(first.token, 200, ANSWER, {}, now_ms=T0 + 2)
    after = await refused(store.begin(SCOPE, "key-2", H2, now_ms=T0 + 3))
    for error in (while_running, after):
        assert error.status == 422 and error.code == "idempotency_key_reused"
        assert set(error.body()) == {"error", "message"}
    # the stored answer is untouched by the refused attempts
    assert (await store.begin(SCOPE, "key-2", H1, now_ms=T0 + 4)).body == ANSWER


async def test_same_key_while_running_is_409_with_retry_after(store):
    await store.begin(SCOPE, "key-3", H1, now_ms=T0)
    error = await refused(store.begin(SCOPE, "key-3", H1, now_ms=T0 + 59_999))
    assert error.status == 409 and error.code == "idempotency_in_progress"
    assert error.headers == {"Retry-After": "1"}
    assert error.body()["retry_after"] == 1


async def test_scopes_are_separate(store):
    a = await store.begin("echo_words:agent-a", "same", H1, now_ms=T0)
    b = await store.begin("echo_words:agent-b", "same", H2, now_ms=T0)
    c = await store.begin("other_tool:agent-a", "same", H2, now_ms=T0)
    assert a.kind == b.kind == c.kind == "new"
    assert len({a.token, b.token, c.token}) == 3


async def test_abandon_frees_the_key_for_the_paid_retry(store):
    quoted = await store.begin(SCOPE, "key-4", H1, now_ms=T0)  # answered 402: did not execute
    assert await store.abandon(quoted.token)
    assert not await store.abandon(quoted.token)
    assert not await store.finish(quoted.token, 200, ANSWER, {}, now_ms=T0)
    assert await IdempotencyRecord.count() == 0
    paid = await store.begin(SCOPE, "key-4", H1, now_ms=T0 + 10)
    assert paid.kind == "new" and paid.token != quoted.token
    # an old token cannot remove the new owner's record
    assert not await store.abandon(quoted.token)
    assert await store.finish(paid.token, 200, ANSWER, {}, now_ms=T0 + 20)
    assert not await store.abandon(paid.token)  # finished records are kept
    assert (await store.begin(SCOPE, "key-4", H1, now_ms=T0 + 30)).kind == "replay"


async def test_records_expire_after_the_ttl(kernel):
    store = IdempotencyStore(ttl_s=3_600)
    first = await store.begin(SCOPE, "key-5", H1, now_ms=T0)
    await store.finish(first.token, 200, ANSWER, {}, now_ms=T0 + 1_000)
    assert (await store.begin(SCOPE, "key-5", H1, now_ms=T0 + 3_600_999)).kind == "replay"
    # past the TTL the key is free again, for any body
    fresh = await store.begin(SCOPE, "key-5", H2, now_ms=T0 + 3_601_000)
    assert fresh.kind == "new"
    assert not await store.finish(first.token, 200, ANSWER, {}, now_ms=T0 + 3_601_001)
    assert await store.finish(fresh.token, 201, {"v": 2}, {}, now_ms=T0 + 3_601_002)
    assert (await store.begin(SCOPE, "key-5", H2, now_ms=T0 + 3_601_003)).body == {"v": 2}


async def test_purge_removes_only_expired_records(kernel):
    store = IdempotencyStore(ttl_s=100)
    old = await store.begin(SCOPE, "old", H1, now_ms=T0)
    await store.finish(old.token, 200, ANSWER, {}, now_ms=T0)
    await store.begin(SCOPE, "running-old", H1, now_ms=T0)
    await store.begin(SCOPE, "new", H1, now_ms=T0 + 50_000)
    assert await store.purge_expired(now_ms=T0 + 99_999) == 0
    assert await store.purge_expired(now_ms=T0 + 100_000) == 2
    assert await IdempotencyRecord.select(IdempotencyRecord.id).output(as_list=True) == [record_id(SCOPE, "new")]


async def test_a_crashed_owner_is_taken_over_after_the_lease(kernel):
    store = IdempotencyStore(ttl_s=86_400, running_lease_s=30)
    crashed = await store.begin(SCOPE, "key-6", H1, now_ms=T0)
    assert (await refused(store.begin(SCOPE, "key-6", H1, now_ms=T0 + 29_999))).status == 409
    # a different body is still the wrong body, lease or not
    assert (await refused(store.begin(SCOPE, "key-6", H2, now_ms=T0 + 30_000))).status == 422
    taken = await store.begin(SCOPE, "key-6", H1, now_ms=T0 + 30_000)
    assert taken.kind == "new" and taken.token != crashed.token
    # the new owner holds a fresh lease
    assert (await refused(store.begin(SCOPE, "key-6", H1, now_ms=T0 + 59_999))).status == 409
    # the old owner waking up can neither finish nor abandon it
    assert not await store.finish(crashed.token, 200, {"stale": True}, {}, now_ms=T0 + 40_000)
    assert not await store.abandon(crashed.token)
    assert await store.finish(taken.token, 200, ANSWER, HEADERS, now_ms=T0 + 41_000)
    assert await store.begin(SCOPE, "key-6", H1, now_ms=T0 + 42_000) == Begin(
        "replay", status=200, body=ANSWER, headers=HEADERS
    )


async def test_concurrent_takeovers_have_one_winner(kernel):
    store = IdempotencyStore(ttl_s=86_400, running_lease_s=30)
    await store.begin(SCOPE, "key-7", H1, now_ms=T0)
    outcomes = await asyncio.gather(
        *[store.begin(SCOPE, "key-7", H1, now_ms=T0 + 31_000) for _ in range(20)], return_exceptions=True
    )
    winners = [o for o in outcomes if isinstance(o, Begin)]
    assert len(winners) == 1 and winners[0].kind == "new"
    assert all(isinstance(o, ServiceError) and o.status == 409 for o in outcomes if not isinstance(o, Begin))


async def test_thirty_concurrent_begins_one_new_then_all_replay(kernel):
    """30 concurrent requests with one key, split across two processes' engines:
    exactly one owns it, the other 29 get 409 while it runs; after `finish`, every
    later request replays the identical status, body and headers."""
    async with other_process(kernel) as engine:
        stores = [IdempotencyStore(86_400), IdempotencyStore(86_400, engine=engine)]
        outcomes = await asyncio.gather(
            *[stores[i % 2].begin(SCOPE, "order-42", H1, now_ms=T0 + i) for i in range(30)], return_exceptions=True
        )
        owners = [o for o in outcomes if isinstance(o, Begin)]
        assert len(owners) == 1 and owners[0].kind == "new", outcomes
        others = [o for o in outcomes if not isinstance(o, Begin)]
        assert len(others) == 29
        assert all(
            isinstance(o, ServiceError) and (o.status, o.code) == (409, "idempotency_in_progress") for o in others
        )
        assert all(o.headers["Retry-After"] == "1" for o in others)

        assert await stores[1].finish(owners[0].token, 202, ANSWER, HEADERS, now_ms=T0 + 100)
        later = await asyncio.gather(
            *[stores[i % 2].begin(SCOPE, "order-42", H1, now_ms=T0 + 200 + i) for i in range(30)]
        )
    assert all(b == Begin("replay", status=202, body=ANSWER, headers=HEADERS) for b in later)
    assert await IdempotencyRecord.count() == 1


# -- keys, hashes and settings (no database) ---------------------------------------------
@pytest.mark.parametrize("key", ["", "x" * 256, "café", "tab\there", "line\nbreak", "\x7f"])
def test_malformed_keys_are_400_invalid_request(key):
    with pytest.raises(ServiceError) as info:
        check_key(key)
    error = info.value
    assert error.status == 400 and error.code == "invalid_request"
    assert [d["field"] for d in error.details] == ["Idempotency-Key"]


async def test_begin_checks_the_key_before_touching_the_database(store):
    error = await refused(store.begin(SCOPE, "é", H1, now_ms=T0))
    assert error.status == 400 and error.details[0]["field"] == "Idempotency-Key"
    assert await IdempotencyRecord.count() == 0


def test_valid_keys_and_missing_key():
    for key in ("a", "x" * 255, "550e8400-e29b-41d4-a716-446655440000", "order 42 ~!@#$%^&*()"):
        assert check_key(key) == key
    error = missing_key()
    assert (error.status, error.code, error.details) == (
        400,
        "invalid_request",
        [{"field": "Idempotency-Key", "message": "required"}],
    )


def test_body_hash_ignores_key_order_and_whitespace_only():
    assert hash_body(b'{"a": 1, "b": [1, 2]}') == hash_body(b'{"b":[1,2],"a":1}')
    assert hash_body(b'{"a": 1}') != hash_body(b'{"a": 2}')
    assert hash_body(b'{"a": 1, "memo": "m"}') != hash_body(b'{"a": 1}')
    assert len(hash_body(b"not json")) == 64


def test_settings():
    assert parse_settings({}) == (86_400, 60)
    assert parse_settings({"TOLLWAY_IDEMPOTENCY_TTL_S": "3600", "TOLLWAY_IDEMPOTENCY_LEASE_S": "120"}) == (3_600, 120)
    for env in (
        {"TOLLWAY_IDEMPOTENCY_TTL_S": "1d"},
        {"TOLLWAY_IDEMPOTENCY_TTL_S": "10"},
        {"TOLLWAY_IDEMPOTENCY_LEASE_S": "0"},
    ):
        with pytest.raises(ValueError, match="TOLLWAY_IDEMPOTENCY_"):
            parse_settings(env)


async def test_answer_once_keeps_the_x402_settlement_and_replays_it_as_an_object(store):
    from tollway._core.basics.request import Answer
    from tollway._core.payments import x402

    settlement = {
        "success": True,
        "payer": "0x" + "ab" * 20,
        "transaction": "0x" + "11" * 32,
        "network": "eip155:84532",
    }
    ran: list[int] = []

    async def run() -> Answer:
        ran.append(1)
        return Answer(200, ANSWER, {"X-Other": "v"}, settlement=settlement)

    first = await store.answer_once(SCOPE, "key-x402", b'{"text": "one"}', run)
    again = await store.answer_once(SCOPE, "key-x402", b'{"text": "one"}', run)
    assert ran == [1] and first.settlement == settlement
    assert again == Answer(200, ANSWER, {"X-Other": "v"}, settlement=settlement)
    # stored as it always was: the settlement in its PAYMENT-RESPONSE header form
    row = await IdempotencyRecord.select().where(IdempotencyRecord.id == record_id(SCOPE, "key-x402")).first()
    assert row["headers"] == '{"PAYMENT-RESPONSE":"%s","X-Other":"v"}' % x402.encode_header(settlement)
    # and a record written that way before replays with its settlement as an object
    earlier = await store.begin(SCOPE, "key-old", H1, now_ms=T0)
    await store.finish(earlier.token, 200, ANSWER, HEADERS)
    old = await store.answer_once(SCOPE, "key-old", b'{"text": "one"}', run)
    assert old == Answer(200, ANSWER, {"X-Other": "v"}, settlement={"success": True}) and ran == [1]
