"""Registries' answers reused for TOLLWAY_UPSTREAM_CACHE_S: what is kept, for how long,
shared between requests in flight, and how the evidence dates a reused answer."""

from __future__ import annotations

import asyncio

import pytest

from tests.support import registry_plugin
from tests.support.registry_plugin import DEFINE, SlowRegistry
from tollway._core.plugin_api.upstream_cache import UpstreamCache, keepable
from tollway.testing import credits_session, http_client

TOLL = {"word": "toll"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def counting(answer: object):
    calls: list[int] = []

    async def fetch() -> object:
        calls.append(1)
        return answer

    return calls, fetch


async def test_an_answer_is_reused_until_its_time_is_up() -> None:
    clock = Clock()
    cache = UpstreamCache(60, clock=clock)
    calls, fetch = counting("answer")
    assert await cache.answer("k", fetch, lambda a: True) == "answer"
    clock.now += 59.9
    assert await cache.answer("k", fetch, lambda a: True) == "answer"
    assert len(calls) == 1
    clock.now += 0.1
    await cache.answer("k", fetch, lambda a: True)
    assert len(calls) == 2


async def test_an_answer_not_to_keep_is_asked_again_every_time() -> None:
    cache = UpstreamCache(60)
    calls, fetch = counting("error page")
    for _ in range(3):
        await cache.answer("k", fetch, lambda a: False)
    assert len(calls) == 3


async def test_the_least_recently_used_answer_goes_first() -> None:
    cache = UpstreamCache(60, max_entries=2)
    calls, fetch = counting("x")
    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" comes
        await cache.answer(key, fetch, lambda a: True)
    assert len(calls) == 3
    await cache.answer("a", fetch, lambda a: True)
    assert len(calls) == 3
    await cache.answer("b", fetch, lambda a: True)
    assert len(calls) == 4


def test_only_whole_successful_answers_the_registry_lets_us_keep_are_kept() -> None:
    assert keepable(200, {}, 10, 100)
    assert keepable(204, {"cache-control": "max-age=30"}, 0, 100)
    assert not keepable(404, {}, 10, 100)
    assert not keepable(429, {}, 10, 100)
    assert not keepable(500, {}, 10, 100)
    assert not keepable(200, {"cache-control": "no-store"}, 10, 100)
    assert not keepable(200, {"cache-control": "Private, max-age=60"}, 10, 100)
    assert not keepable(200, {}, 101, 100)


async def test_requests_in_flight_together_share_one_answer_and_one_failure() -> None:
    cache = UpstreamCache(60)
    started: list[int] = []
    gate = asyncio.Event()

    async def slow() -> str:
        started.append(1)
        await gate.wait()
        return "answer"

    waiting = [asyncio.create_task(cache.answer("k", slow, lambda a: True)) for _ in range(10)]
    await asyncio.sleep(0.01)
    gate.set()
    assert await asyncio.gather(*waiting) == ["answer"] * 10
    assert len(started) == 1

    async def failing() -> str:
        started.append(1)
        await asyncio.sleep(0.01)
        raise RuntimeError("registry down")

    together = [asyncio.create_task(cache.answer("f", failing, lambda a: True)) for _ in range(5)]
    results = await asyncio.gather(*together, return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert len(started) == 2  # one more fetch for the five


async def test_when_the_request_shared_is_cancelled_the_others_ask_for_themselves() -> None:
    cache = UpstreamCache(60)
    fetches: list[int] = []

    async def slow() -> str:
        fetches.append(1)
        await asyncio.sleep(0.05)
        return "answer"

    first = asyncio.create_task(cache.answer("k", slow, lambda a: True))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(cache.answer("k", slow, lambda a: True))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await second == "answer"
    assert len(fetches) == 2


async def test_paid_lookups_reuse_the_registry_answer_and_date_their_evidence_by_it(kernel_factory) -> None:
    transport = SlowRegistry()
    kernel = await kernel_factory(plugins=[("registry", registry_plugin)], transport=transport)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        together = await asyncio.gather(*[client.post(DEFINE, json=TOLL, headers=auth) for _ in range(4)])
        await asyncio.sleep(0.02)
        later = await client.post(DEFINE, json=TOLL, headers=auth)
    assert [r.status_code for r in [*together, later]] == [200] * 5
    assert transport.served == ["toll"]
    answers = [r.json()["data"] for r in [*together, later]]
    # every answer is the registry's one answer, dated when it arrived
    assert len({a["evidence"]["retrieved_at"] for a in answers}) == 1
    assert all(a["result"] == answers[0]["result"] and a["result"]["definition"] for a in answers)
    assert len({a["receipt_id"] for a in answers}) == 5  # each call still paid and receipted


async def test_with_reuse_off_every_lookup_asks_the_registry(kernel_factory) -> None:
    transport = SlowRegistry()
    kernel = await kernel_factory(
        plugins=[("registry", registry_plugin)], transport=transport, env={"TOLLWAY_UPSTREAM_CACHE_S": "0"}
    )
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for _ in range(3):
            assert (await client.post(DEFINE, json=TOLL, headers=auth)).status_code == 200
    assert transport.served == ["toll"] * 3
