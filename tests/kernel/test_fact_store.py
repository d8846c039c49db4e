"""The fact store, through paid calls over HTTP on SQLite and PostgreSQL: a completed
lookup records its facts with its receipt; a new row only when the value differs from
the last one seen (key order never counts); private facts belong to their caller;
benchmarkable numbers and peers are kept as columns; a failed call records nothing;
concurrent lookups of one changed value make one row."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest

from tests.support.facts_plugin import CATALOGUE, FactsPlugin
from tollway import search_key
from tollway._core.storage import sql
from tollway.testing import credits_session, http_client

PATH = "/v1/tools/test/item-facts"


@pytest.fixture(autouse=True)
def catalogue():
    CATALOGUE.clear()
    yield CATALOGUE
    CATALOGUE.clear()


async def rows(key: str) -> list[dict]:
    return [dict(r) for r in await sql.fetch("SELECT * FROM tw_facts WHERE entity_key = {} ORDER BY id", key)]


async def test_a_new_row_only_when_the_value_changed(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("facts", FactsPlugin())])
    CATALOGUE["A1"] = {"score": 3, "kind": "Tool", "region": "North", "as_of": "2026-01-01"}
    async with http_client(kernel) as client:
        agent, auth = await credits_session(client)
        for _ in range(2):
            assert (await client.post(PATH, json={"key": "a1"}, headers=auth)).status_code == 200
        CATALOGUE["A1"] = {
            "region": "North",
            "kind": "Tool",
            "score": 3.0,
            "as_of": "2026-01-01",
        }  # same value, other order
        assert (await client.post(PATH, json={"key": "A1"}, headers=auth)).status_code == 200
        assert len(await rows("A1")) == 1
        CATALOGUE["A1"] = {"score": 4, "kind": "Tool", "region": "North", "as_of": "2026-02-01"}
        assert (await client.post(PATH, json={"key": "A1"}, headers=auth)).status_code == 200
    found = await rows("A1")
    assert [json.loads(r["value"])["score"] for r in found] == [3, 4]
    assert {r["owner"] for r in found} == {""} and {r["recorded_by"] for r in found} == {agent}
    assert found[1]["as_of"] == "2026-02-01"
    assert found[1]["changed_on"] == dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    numbers = await sql.fetch(
        "SELECT field, number, peer_1, peer_2 FROM tw_fact_numbers WHERE entity_key = 'A1' ORDER BY field"
    )
    assert [(n["field"], n["number"], n["peer_1"], n["peer_2"]) for n in numbers] == [("score", 4.0, "tool", "north")]


async def test_private_facts_belong_to_the_caller_and_stay_out_of_benchmark(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("facts", FactsPlugin())])
    CATALOGUE["P9"] = {"score": 1, "kind": "x"}
    async with http_client(kernel) as client:
        one, auth_one = await credits_session(client)
        two, auth_two = await credits_session(client)
        for auth in (auth_one, auth_two):
            assert (await client.post(PATH, json={"key": "P9", "private": True}, headers=auth)).status_code == 200
    assert sorted(r["owner"] for r in await rows("P9")) == sorted([one, two])
    assert await sql.fetch("SELECT id FROM tw_fact_numbers WHERE entity_key = 'P9'") == []


async def test_a_search_is_keyed_by_the_hash_of_its_input_never_the_input(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("facts", FactsPlugin())])
    CATALOGUE.update({"AB1": {"score": 1}, "AB2": {"score": 2}})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        assert (
            await client.post(PATH, json={"prefix": "ab", "memo": "audit fields are not part of the key"}, headers=auth)
        ).status_code == 200
    tool = kernel.tools["item_facts"]
    key = search_key(tool.input_type(prefix="ab"))
    found = await rows(key)
    assert len(found) == 1 and json.loads(found[0]["value"]) == {"keys": ["AB1", "AB2"]}
    everything = json.dumps([dict(r) for r in await sql.fetch("SELECT * FROM tw_facts")])
    assert '"ab"' not in everything.lower().replace('"ab1"', "").replace('"ab2"', "")


async def test_a_failed_call_records_nothing(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("facts", FactsPlugin())])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        assert (await client.post(PATH, json={"key": "MISSING"}, headers=auth)).status_code == 404
    assert await sql.fetch("SELECT id FROM tw_facts") == []


async def test_concurrent_lookups_of_one_changed_value_make_one_row(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("facts", FactsPlugin())])
    CATALOGUE["C3"] = {"score": 1}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "5")
        assert (await client.post(PATH, json={"key": "C3"}, headers=auth)).status_code == 200
        CATALOGUE["C3"] = {"score": 2}
        answers = await asyncio.gather(*(client.post(PATH, json={"key": "C3"}, headers=auth) for _ in range(12)))
    assert {a.status_code for a in answers} == {200}
    assert [json.loads(r["value"])["score"] for r in await rows("C3")] == [1, 2]
    heads = await sql.fetch("SELECT fact_id FROM tw_fact_heads WHERE entity_key = 'C3'")
    assert [h["fact_id"] for h in heads] == [(await rows("C3"))[-1]["id"]]


def test_a_fact_is_made_as_the_frozen_dataclass_it_declares() -> None:
    """`Fact`'s own `__init__` (one step, not a setattr a field) keeps the dataclass's
    signature, defaults, equality, `replace` and refusal of assignment."""
    import dataclasses

    from tollway._core.plugin_api.tool_declarations import Fact

    full = Fact(
        "vehicle_recalls", "HONDA|ACCORD|2021", {"total": 4}, "nhtsa", "2024-01-02", False, {"make": "HONDA"}, False
    )
    named = Fact(
        attribute="vehicle_recalls", key="HONDA|ACCORD|2021", value={"total": 4}, source="nhtsa",
        as_of="2024-01-02", public=False, peers={"make": "HONDA"}, benchmarked=False,
    )  # fmt: skip
    assert full == named
    assert dataclasses.asdict(named) == {
        "attribute": "vehicle_recalls", "key": "HONDA|ACCORD|2021", "value": {"total": 4}, "source": "nhtsa",
        "as_of": "2024-01-02", "public": False, "peers": {"make": "HONDA"}, "benchmarked": False,
    }  # fmt: skip
    plain, other = Fact("a", "k", 1, "s"), Fact("a", "k", 1, "s")
    assert (plain.as_of, plain.public, plain.peers, plain.benchmarked) == (None, True, {}, True)
    assert plain.peers is not other.peers  # a new dict each, as `default_factory=dict` made
    assert dataclasses.replace(plain, key="j") == Fact("a", "j", 1, "s")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.key = "j"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Fact("a", "k", 1)  # type: ignore[call-arg]


def test_canonical_text_and_hash_are_the_same_remembered_or_not() -> None:
    """`canonical` keeps short texts' (text, hash): the answer is the RFC 8785 text and its
    SHA-256 either way, and a long text is not kept."""
    import hashlib

    import rfc8785

    from tollway._core.history import store

    for value in ({"total": 4}, {"b": [1, "é", None], "a": 0.5}, {"long": "x" * 400}, [3, {"z": True}]):
        expected = rfc8785.dumps(value)
        for _ in range(2):
            text, digest = store.canonical(value)
            assert text == expected.decode()
            assert digest == hashlib.sha256(expected).hexdigest()
    assert rfc8785.dumps({"long": "x" * 400}) not in store._HASHED
    assert rfc8785.dumps({"total": 4}) in store._HASHED
