"""The Changes tool (`POST /v1/tools/changes`) through HTTP and MCP, on SQLite and
PostgreSQL: refusals before payment (no quote made), the several-sources refusal
after payment (refunded), who may see which facts, the window, limit, truncation and
`partial`, `$entity` rows, searches matched by their input's hash, and Changes over
real recorded answers (OFAC lists of 2021 and 2025, vPIC captures of one VIN, an FDIC
institution row).

The store stamps each fact row with the UTC day it was written, which in a test is
always today. Where a test needs facts on distinct days it moves rows to earlier days
with SQL (`move_to_day`), keeping each series' days in the order of its rows, as
real time would have written them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from eth_account import Account
from mcp import Client

from tests.support.facts_plugin import CATALOGUE, SOURCE, FactsPlugin, ItemAnswer, ItemEvidence, ItemInput
from tollway import Fact, Tool, ToolContext, hookimpl, search_key
from tollway._core.history.store import write
from tollway._core.storage import sql
from tollway._mcp_server import BearerIdentity, build_server
from tollway.testing import count_quotes, credits_session, http_client, pay_402

CHANGES = "/v1/tools/changes"
ITEMS = "/v1/tools/test/item-facts"
PLAIN = "/v1/tools/test/plain-facts"


# -- a data tool that keeps history but is not a search ----------------------------------------
async def run_plain(value: ItemInput, ctx: ToolContext) -> ItemAnswer:
    key = (value.key or "").upper()
    return ItemAnswer(result={"key": key, "value": CATALOGUE.get(key, {})}, evidence=ItemEvidence(SOURCE, None))


def plain_facts(value: ItemInput, answer: ItemAnswer) -> list[Fact]:
    return [Fact(attribute="plain_facts", key=answer.result["key"], value=answer.result["value"], source=SOURCE)]


PLAIN_FACTS = Tool(
    name="plain_facts",
    path=PLAIN,
    title="Plain item",
    description="A catalogue item recorded by key only.",
    category="data",
    input_type=ItemInput,
    output_type=ItemAnswer,
    run=run_plain,
    price="0.005",
    family="items",
    facts=plain_facts,
)


class PlainPlugin:
    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        register(PLAIN_FACTS)


@pytest.fixture(autouse=True)
def catalogue():
    CATALOGUE.clear()
    yield CATALOGUE
    CATALOGUE.clear()


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("facts", FactsPlugin()), ("plain", PlainPlugin())])


def today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


async def fact_ids(attribute: str, key: str) -> list[int]:
    rows = await sql.fetch(
        "SELECT id FROM tw_facts WHERE attribute = {} AND entity_key = {} ORDER BY id", attribute, key
    )
    return [int(r["id"]) for r in rows]


async def move_to_day(fact_id: int, day: str) -> None:
    """Say a fact row was first seen on `day` (noon UTC): see the module docstring."""
    ms = int(dt.datetime.fromisoformat(day + "T12:00:00+00:00").timestamp() * 1000)
    await sql.fetch("UPDATE tw_facts SET changed_on = {}, first_seen_ms = {} WHERE id = {}", day, ms, fact_id)


async def balance(client, auth: dict[str, str]) -> str:
    return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]


async def look_up(client, auth: dict[str, str], body: dict[str, Any], path: str = ITEMS) -> dict[str, Any]:
    resp = await client.post(path, json=body, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def x402_call(client, payer: Any, path: str, body: dict[str, Any]):
    """One call paid over x402 by `payer` (quote, then the signed payment)."""
    quote = await client.post(path, json=body)
    assert quote.status_code == 402, quote.text
    return await client.post(
        path, json=body, headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
    )


# -- before payment ------------------------------------------------------------------------------
BASE = {"attribute": "item_facts", "key": "A1", "since": "2026-01-01"}
LONG_INPUT = {"prefix": "x" * 10_000}


@pytest.mark.parametrize(
    ("body", "error", "fields"),
    [
        ({**BASE, "since": "2026-02-30"}, "invalid_request", ["since"]),
        ({**BASE, "since": "2026-1-5"}, "invalid_request", ["since"]),
        ({**BASE, "until": "20260105"}, "invalid_request", ["until"]),
        ({**BASE, "since": "2026-03-02", "until": "2026-03-01"}, "invalid_request", ["until"]),
        ({**BASE, "since": "2999-01-01"}, "invalid_request", ["since"]),  # after today, the default until
        ({"attribute": "item_facts", "since": "2026-01-01"}, "invalid_request", ["key", "input"]),
        ({**BASE, "input": {"prefix": "a"}}, "invalid_request", ["key", "input"]),
        ({"attribute": "item_facts", "input": LONG_INPUT, "since": "2026-01-01"}, "invalid_request", ["input"]),
        ({**BASE, "limit": 0}, "invalid_request", ["limit"]),
        ({**BASE, "limit": 201}, "invalid_request", ["limit"]),
        (
            {**BASE, "since": "2026-13-01", "limit": 500, "colour": "red"},
            "invalid_request",
            ["since", "limit", "colour"],
        ),
        # a bad date beside both key and input: every failing field in the one 400
        ({**BASE, "since": "2026-02-30", "input": {"prefix": "a"}}, "invalid_request", ["since", "key", "input"]),
        ({"attribute": "item_facts", "since": "2026-1-5"}, "invalid_request", ["since", "key", "input"]),
        ({"key": "A1"}, "invalid_request", ["attribute", "since"]),
        ({**BASE, "attribute": "weather"}, "invalid_input", ["attribute"]),
        ({**BASE, "attribute": "changes"}, "invalid_input", ["attribute"]),
        ({"attribute": "plain_facts", "input": {"key": "a1"}, "since": "2026-01-01"}, "invalid_input", ["input"]),
        (
            {"attribute": "item_facts", "input": {"prefix": ""}, "since": "2026-01-01"},
            "invalid_input",
            ["input.prefix"],
        ),
        (
            {"attribute": "item_facts", "input": {"prefix": "a", "colour": 1}, "since": "2026-01-01"},
            "invalid_input",
            ["input.colour"],
        ),
        (
            {"attribute": "item_facts", "input": {"key": "a", "prefix": "b"}, "since": "2026-01-01"},
            "invalid_input",
            ["input.key"],
        ),
    ],
)
async def test_refusals_before_payment_name_every_failing_field(kernel, body, error, fields) -> None:
    async with http_client(kernel) as client:
        unpaid = await client.post(CHANGES, json=body)
        _, auth = await credits_session(client)
        with_credits = await client.post(CHANGES, json=body, headers=auth)
        left = await balance(client, auth)
    for resp in (unpaid, with_credits):
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] == error
        assert [d["field"] for d in resp.json()["details"]] == fields
        assert "receipt_id" not in resp.json() and "PAYMENT-REQUIRED" not in resp.headers
    assert await count_quotes(kernel) == 0 and left == "1.000000"


async def test_an_attribute_without_history_lists_those_with_history(kernel) -> None:
    async with http_client(kernel) as client:
        resp = await client.post(CHANGES, json={**BASE, "attribute": "echo_words"})
    body = resp.json()
    assert resp.status_code == 400 and body["error"] == "invalid_input"
    assert body["attributes"] == ["item_facts", "plain_facts"]
    assert "item_facts" in body["message"] and body["details"][0]["field"] == "attribute"


async def test_an_unpaid_valid_call_is_quoted_at_the_price(kernel) -> None:
    CATALOGUE["A1"] = {"score": 1}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        await look_up(client, auth, {"prefix": "a"})
        resp = await client.post(
            CHANGES,
            json={"attribute": "item_facts", "input": {"prefix": "a", "memo": "left out"}, "since": "2026-01-01"},
        )
    assert resp.status_code == 402 and resp.json()["amount_usdc"] == "0.005000"
    assert await count_quotes(kernel) == 1


async def test_an_entity_with_no_history_is_no_data_before_payment(kernel) -> None:
    """As Benchmark refuses an attribute with nothing recorded: free, no quote, whatever the key's case."""
    CATALOGUE["A1"] = {"score": 1}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        await look_up(client, auth, {"key": "A1"})
        before = await balance(client, auth)
        answers = [
            await client.post(CHANGES, json={**BASE, "key": key}, headers=headers)
            for key in ("ZZ9", "zz9")
            for headers in ({}, auth)
        ]
        search = await client.post(
            CHANGES, json={"attribute": "item_facts", "input": {"prefix": "q"}, "since": "2026-01-01"}, headers=auth
        )
        left = await balance(client, auth)
    for resp in [*answers, search]:
        assert resp.status_code == 400, resp.text
        body = resp.json()
        assert body["error"] == "no_data" and "receipt_id" not in body and "PAYMENT-REQUIRED" not in resp.headers
    assert [d["field"] for d in answers[0].json()["details"]] == ["key"]
    assert [d["field"] for d in search.json()["details"]] == ["input"]
    assert await count_quotes(kernel) == 0 and left == before


async def test_a_key_is_normalised_as_benchmark_normalises_it(kernel) -> None:
    """A lower-case key reads the entity recorded in capitals: the same answer, charged once."""
    days = ["2026-01-01", "2026-01-02"]
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for n in range(2):
            CATALOGUE["K7"] = {"score": n}
            await look_up(client, auth, {"key": "K7"})
        for fact_id, day in zip(await fact_ids("item_facts", "K7"), days):
            await move_to_day(fact_id, day)
        before = await balance(client, auth)
        lower = await client.post(CHANGES, json={**BASE, "key": "k7"}, headers=auth)
        upper = await client.post(CHANGES, json={**BASE, "key": "K7"}, headers=auth)
        after = await balance(client, auth)
    assert lower.status_code == 200, lower.text
    low, up = lower.json()["data"], upper.json()["data"]
    assert low["key"] == "K7" and low["partial"] is False and low["recorded_since"] == "2026-01-01"
    assert (
        low["changes"]
        == up["changes"]
        == [{"changed_on": "2026-01-02", "field": "score", "before": 0, "after": 1, "source": SOURCE, "as_of": None}]
    )
    assert float(before) - float(after) == pytest.approx(0.010)


# -- after payment --------------------------------------------------------------------------------
async def test_several_sources_need_a_source_and_the_refusal_is_refunded(kernel) -> None:
    CATALOGUE["A1"] = {"score": 1}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        await look_up(client, auth, {"key": "A1"})
        async with kernel.db.transaction():  # a second source of the same entity, through the store's own write
            await write(
                attribute="item_facts",
                entity_key="A1",
                source="mirror catalogue",
                owner="",
                value={"score": 1},
                as_of=None,
                now=1,
                recorded_by=None,
            )
            await write(
                attribute="item_facts",
                entity_key="A1",
                source="mirror catalogue",
                owner="",
                value={"score": 2},
                as_of="2026-02-01",
                now=2,
                recorded_by=None,
            )
        before = await balance(client, auth)
        refused = await client.post(CHANGES, json={**BASE, "since": "1970-01-01"}, headers=auth)
        after_refusal = await balance(client, auth)
        chosen = await client.post(
            CHANGES, json={**BASE, "since": "1970-01-01", "source": "mirror catalogue"}, headers=auth
        )
        after_answer = await balance(client, auth)
        unknown = await client.post(CHANGES, json={**BASE, "source": "nobody"}, headers=auth)
    body = refused.json()
    assert refused.status_code == 400 and body["error"] == "invalid_input"
    assert body["sources"] == ["mirror catalogue", SOURCE]
    assert body["details"] == [{"field": "source", "message": body["details"][0]["message"]}]
    assert body["request_id"].startswith("req_") and body["receipt_id"].startswith("rcpt_")
    receipt = await kernel.receipts.get(body["receipt_id"])
    assert receipt["status"] == "refunded" and receipt["execution_status"] == "failed" and receipt["tool"] == "changes"
    assert after_refusal == before
    data = chosen.json()["data"]
    assert data["changes"] == [
        {
            "changed_on": "1970-01-01",
            "field": "score",
            "before": 1,
            "after": 2,
            "source": "mirror catalogue",
            "as_of": "2026-02-01",
        }
    ]
    assert data["recorded_since"] == "1970-01-01" and data["partial"] is False
    assert float(before) - float(after_answer) == pytest.approx(0.005)
    assert unknown.json()["data"]["recorded_since"] is None and unknown.json()["data"]["partial"] is True


async def test_the_several_sources_refusal_over_x402_is_not_settled(kernel) -> None:
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with kernel.db.transaction():
        for source in ("one", "two"):
            await write(
                attribute="item_facts",
                entity_key="B2",
                source=source,
                owner="",
                value={"n": 1},
                as_of=None,
                now=1,
                recorded_by=None,
            )
    async with http_client(kernel) as client:
        refused = await x402_call(
            client, payer, CHANGES, {"attribute": "item_facts", "key": "B2", "since": "1970-01-01"}
        )
        chain = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()["on_chain_balance"]
    assert refused.status_code == 400 and refused.json()["sources"] == ["one", "two"]
    receipt = await kernel.receipts.get(refused.json()["receipt_id"])
    assert receipt["status"] == "not_charged" and receipt["execution_status"] == "failed"
    assert chain == "1.000000"


async def test_private_facts_are_seen_only_by_the_agent_whose_call_recorded_them(kernel) -> None:
    one, two = Account.create(), Account.create()
    for payer in (one, two):
        await kernel.accounts.fund_chain(payer.address, 1_000_000)
    body = {"attribute": "item_facts", "key": "P9", "since": "1970-01-01"}
    async with http_client(kernel) as client:
        for score in (1, 2):  # one's private view of P9 changes
            CATALOGUE["P9"] = {"score": score}
            assert (await x402_call(client, one, ITEMS, {"key": "P9", "private": True})).status_code == 200
        _, auth = await credits_session(client)
        CATALOGUE["P9"] = {"score": 7}
        await look_up(client, auth, {"key": "P9"})  # and a public record of it by a third agent
        CATALOGUE["P9"] = {"score": 8}
        await look_up(client, auth, {"key": "P9"})
        seen_by_one = (await x402_call(client, one, CHANGES, body)).json()["data"]
        seen_by_two = (await x402_call(client, two, CHANGES, body)).json()["data"]
    assert [(c["field"], c["before"], c["after"]) for c in seen_by_two["changes"]] == [("score", 7, 8)]
    assert sorted((c["before"], c["after"]) for c in seen_by_one["changes"]) == [(1, 2), (7, 8)]
    assert seen_by_one["recorded_since"] == seen_by_two["recorded_since"] == today()


async def test_another_agents_private_entity_is_not_recorded_for_me(kernel) -> None:
    CATALOGUE["S5"] = {"score": 1}
    async with http_client(kernel) as client:
        _, mine = await credits_session(client)
        _, theirs = await credits_session(client)
        await look_up(client, theirs, {"key": "S5", "private": True})
        CATALOGUE["S5"] = {"score": 2}
        await look_up(client, theirs, {"key": "S5", "private": True})
        before = await balance(client, mine)
        mine_seen = (
            await client.post(CHANGES, json={"attribute": "item_facts", "key": "S5", "since": today()}, headers=mine)
        ).json()
        left = await balance(client, mine)
        theirs_seen = (
            await client.post(CHANGES, json={"attribute": "item_facts", "key": "S5", "since": today()}, headers=theirs)
        ).json()
    # Before payment nobody's identity is known, so another agent's private record admits the
    # call; nothing visible to me is then refused and refunded, never an empty charged answer.
    assert mine_seen["error"] == "no_data"
    receipt = await kernel.receipts.get(mine_seen["receipt_id"])
    assert receipt["status"] == "refunded" and receipt["execution_status"] == "failed" and left == before
    assert [c["after"] for c in theirs_seen["data"]["changes"]] == [2]


async def test_window_limit_truncation_partial_and_recorded_since(kernel) -> None:
    days = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-05", "2026-01-08"]
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for n in range(len(days)):
            CATALOGUE["W1"] = {"score": n, "as_of": f"2025-12-{n + 10}"}
            await look_up(client, auth, {"key": "W1"})
        for fact_id, day in zip(await fact_ids("item_facts", "W1"), days):
            await move_to_day(fact_id, day)

        async def ask(**fields: Any) -> dict[str, Any]:
            resp = await client.post(CHANGES, json={"attribute": "item_facts", "key": "W1", **fields}, headers=auth)
            assert resp.status_code == 200, resp.text
            return resp.json()["data"]

        everything = await ask(since="2025-06-01")
        middle = await ask(since="2026-01-02", until="2026-01-05")
        first_two = await ask(since="2026-01-01", limit=2)
        exactly = await ask(since="2026-01-06", until="2026-01-08", limit=1)
        first_day = await ask(since="2026-01-01", until="2026-01-01")
        empty = await ask(since="2026-01-06", until="2026-01-07")
        later = await ask(since="2027-01-01", until="2027-02-01")
    assert (
        everything["partial"] is True
        and everything["recorded_since"] == "2026-01-01"
        and everything["truncated"] is False
    )
    assert [(c["changed_on"], c["field"], c["before"], c["after"], c["as_of"]) for c in everything["changes"]] == [
        ("2026-01-02", "score", 0, 1, "2025-12-11"),
        ("2026-01-03", "score", 1, 2, "2025-12-12"),
        ("2026-01-05", "score", 2, 3, "2025-12-13"),
        ("2026-01-08", "score", 3, 4, "2025-12-14"),
    ]
    assert [c["after"] for c in middle["changes"]] == [1, 2, 3] and middle[
        "partial"
    ] is False  # the window's first row compares with the one before it
    assert [c["after"] for c in first_two["changes"]] == [1, 2] and first_two["truncated"] is True
    assert [c["after"] for c in exactly["changes"]] == [4] and exactly["truncated"] is False
    assert (
        first_day["changes"] == [] and first_day["partial"] is False
    )  # the first record is where history starts, not a change
    assert empty["changes"] == [] and empty["truncated"] is False and empty["recorded_since"] == "2026-01-01"
    assert later["changes"] == [] and later["partial"] is False


async def test_truncation_across_pages_of_a_long_series(kernel) -> None:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for n in range(7):
            CATALOGUE["L7"] = {"count": n}
            await look_up(client, auth, {"key": "L7"})
        answers = {}
        for limit in (1, 2, 3, 5, 6, 7):
            resp = await client.post(
                CHANGES, json={"attribute": "item_facts", "key": "L7", "since": today(), "limit": limit}, headers=auth
            )
            answers[limit] = resp.json()["data"]
    for limit, data in answers.items():  # read a page of limit + 1 rows at a time
        assert [c["after"] for c in data["changes"]] == list(range(1, min(limit, 6) + 1)), limit
        assert data["truncated"] is (limit < 6), limit


async def test_an_entity_that_stops_and_starts_being_listed(kernel) -> None:
    CATALOGUE["E1"] = {"score": 5}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        await look_up(client, auth, {"key": "E1"})
        async with kernel.db.transaction():  # the source stops listing E1 (what a complete source poll records)
            await write(
                attribute="item_facts",
                entity_key="E1",
                source=SOURCE,
                owner="",
                value=None,
                as_of=None,
                now=0,
                recorded_by=None,
                listed=False,
            )
        await look_up(client, auth, {"key": "E1"})  # listed again, same value
        CATALOGUE["E1"] = {"score": 6}
        await look_up(client, auth, {"key": "E1"})
        for fact_id, day in zip(
            await fact_ids("item_facts", "E1"), ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"]
        ):
            await move_to_day(fact_id, day)
        data = (
            await client.post(
                CHANGES, json={"attribute": "item_facts", "key": "E1", "since": "2026-03-01"}, headers=auth
            )
        ).json()["data"]
    assert [(c["changed_on"], c["field"], c["before"], c["after"]) for c in data["changes"]] == [
        ("2026-03-02", "$entity", "listed", "not_listed"),
        ("2026-03-03", "$entity", "not_listed", "listed"),
        ("2026-03-04", "score", 5, 6),
    ]


async def test_a_search_is_found_by_its_input_never_stored(kernel) -> None:
    CATALOGUE.update({"AB1": {"score": 1}, "AB2": {"score": 2}})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        await look_up(client, auth, {"prefix": "ab"})
        CATALOGUE["AB3"] = {"score": 3}
        await look_up(client, auth, {"prefix": "ab", "memo": "audit fields are not part of a search"})
        found = await client.post(
            CHANGES,
            json={
                "attribute": "item_facts",
                "input": {"prefix": "ab", "private": False, "memo": "m"},
                "since": today(),
            },
            headers=auth,
        )
        other = await client.post(
            CHANGES, json={"attribute": "item_facts", "input": {"prefix": "AB"}, "since": today()}, headers=auth
        )
    data = found.json()["data"]
    assert (
        data["key"] == search_key(ItemInput(prefix="ab"))
        and data["recorded_since"] == today()
        and data["partial"] is False
    )
    assert data["changes"] == [
        {
            "changed_on": today(),
            "field": "keys",
            "before": ["AB1", "AB2"],
            "after": ["AB1", "AB2", "AB3"],
            "source": SOURCE,
            "as_of": None,
        }
    ]
    # another input is another search, never recorded: refused before payment
    assert (
        other.status_code == 400
        and other.json()["error"] == "no_data"
        and search_key(ItemInput(prefix="AB")) in other.json()["message"]
    )


async def test_changes_over_mcp(kernel) -> None:
    CATALOGUE["M1"] = {"score": 1}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        await look_up(client, auth, {"key": "M1"})
        CATALOGUE["M1"] = {"score": 2}
        await look_up(client, auth, {"key": "M1"})
    server = build_server(kernel, identity=BearerIdentity(auth["Authorization"][len("Bearer ") :]))
    async with Client(server.server) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        answer = await client.call_tool("changes", {"attribute": "item_facts", "key": "M1", "since": today()})
        refused = await client.call_tool("changes", {"attribute": "item_facts", "key": "M1", "since": "2026-02-30"})
    assert "changes" in listed
    assert answer.is_error is False
    data = answer.structured_content
    assert data["tool"] == "changes" and data["status"] == "completed"
    assert [(c["field"], c["before"], c["after"]) for c in data["changes"]] == [("score", 1, 2)]
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert (
        receipt["amount_usdc"] == "0.005000" and receipt["category"] == "data" and receipt["subcategory"] == "changes"
    )
    assert refused.is_error and refused.structured_content["error"] == "invalid_request"
    assert refused.structured_content["details"][0]["field"] == "since"


def test_the_input_and_answer_are_plain_json() -> None:
    """What the fronts send and receive: dates are YYYY-MM-DD strings both ways."""
    from tollway._core.history.changes import ChangesInput

    value = msgspec.convert({"attribute": "a", "key": "k", "since": "2026-01-02"}, ChangesInput, strict=True)
    assert value.since == dt.date(2026, 1, 2) and value.limit == 50
    assert msgspec.json.decode(msgspec.json.encode(value))["since"] == "2026-01-02"
