"""The `benchmark` tool through HTTP (and one MCP call) on SQLite and PostgreSQL: its
statistics equal numpy's `percentile` (default linear method) and the percentile
definition (share below plus half the share equal) over random value sets; every
refusal happens at its moment (before payment: no quote made; after payment: the call
is recorded failed and refunded); peer filters match case-insensitively; private facts
and other sources stay out.

The property test records numbers straight into the fact store (`write_numbers`, in
one transaction) so each example is quick; the other tests record facts the way
production does, through paid lookups of the `item_facts` test tool."""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client

from tests.support.echo_plugin import EchoPlugin
from tests.support.facts_plugin import CATALOGUE, ITEM_FACTS, SOURCE, FactsPlugin
from tests.support.plans import plan
from tollway import Fact
from tollway._core.basics.ids import now_ms
from tollway._core.history import ranks
from tollway._core.history.store import write_numbers
from tollway._core.storage import sql
from tollway._mcp_server import BearerIdentity, build_server
from tollway.testing import count_quotes, credits_session, http_client, pay_402

PATH = "/v1/tools/benchmark"
ITEMS = "/v1/tools/test/item-facts"
OPERATOR = {"Authorization": "Bearer test-operator-token"}


@pytest.fixture(autouse=True)
def catalogue():
    CATALOGUE.clear()
    yield CATALOGUE
    CATALOGUE.clear()


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("facts", FactsPlugin()), ("echo", EchoPlugin())])


def numpy_figures(numbers: list[float], placed: float | None) -> dict[str, float | None]:
    x = np.array(numbers, dtype=float)
    p25, median, p75 = np.percentile(x, [25, 50, 75])
    percentile = None if placed is None else float(100 * (np.sum(x < placed) + 0.5 * np.sum(x == placed)) / len(x))
    return {
        "min": float(x.min()),
        "p25": float(p25),
        "median": float(median),
        "p75": float(p75),
        "max": float(x.max()),
        "percentile": percentile,
    }


def assert_figures(data: dict, numbers: list[float], placed: float | None, *, exact: bool) -> None:
    expected = numpy_figures(numbers, placed)
    assert data["count"] == len(numbers)
    assert (data["min"], data["max"]) == (expected["min"], expected["max"])
    for name in ("p25", "median", "p75"):
        if exact:  # whole numbers: the interpolation is exact, so equal to the last bit
            assert data[name] == expected[name], (name, data[name], expected[name])
        else:  # any doubles: equal up to the rounding of the last bit or two
            assert math.isclose(data[name], expected[name], rel_tol=1e-12, abs_tol=1e-9), (
                name,
                data[name],
                expected[name],
            )
    if placed is None:
        assert data["percentile"] is None
    else:
        assert math.isclose(data["percentile"], expected["percentile"], rel_tol=1e-12, abs_tol=1e-12)


async def record(
    kernel,
    numbers: list[float],
    *,
    kind: str = "tool",
    region: str | int = "north",
    source: str = SOURCE,
    prefix: str = "K",
    field: str = "score",
    now: int | None = None,
) -> None:
    """Numbers of entities `<prefix>0..n` as current public facts of `item_facts`."""
    async with kernel.db.transaction():
        for i, number in enumerate(numbers):
            fact = Fact(
                attribute="item_facts",
                key=f"{prefix}{i}",
                value={field: number},
                source=source,
                peers={"kind": kind, "region": region},
            )
            await write_numbers(ITEM_FACTS.benchmark, fact, fact.key, now or now_ms())


async def balance(client, auth) -> str:
    return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]


async def look_up(client, auth, items: dict[str, dict], **extra) -> None:
    """Put `items` in the catalogue and look each up through a paid call (recording its facts)."""
    CATALOGUE.update(items)
    for key in items:
        resp = await client.post(ITEMS, json={"key": key, **extra}, headers=auth)
        assert resp.status_code == 200, resp.text


# -- the statistics ---------------------------------------------------------------------------
async def test_a_filtered_peer_set_is_read_through_the_index_of_its_peer_columns(kernel):
    """On SQLite without statistics (the service never runs ANALYZE), on PostgreSQL with those
    autovacuum keeps, each read of a filtered peer set goes
    through the index its filtered columns lead (make: p1; model year alone: p2), never through
    the group's number order with the peer column checked row by row in the table."""
    for kind in ("tool", "gadget", "widget"):
        await record(kernel, [float(i % 97) for i in range(150)], kind=kind, region=kind[0], prefix=kind)
    if sql.on_postgres():  # PostgreSQL's autovacuum keeps statistics: its planner has them
        await sql.fetch("ANALYZE tw_fact_numbers")
    placed = 40.0
    cases = {"tw_fact_numbers_group_p1": (("peer_1", "tool"),), "tw_fact_numbers_group_p2": (("peer_2", "g"),)}
    for index, filters in cases.items():
        peers = ranks.PeerSet("item_facts", "score", SOURCE, filters)
        if sql.on_postgres():
            reads = [(ranks.SUMMARY_POSTGRES, (placed, placed, ranks.PEERS))]
        else:
            summary = (*[ranks.PEERS] * 6, placed, ranks.PEERS, placed)
            quartiles = (ranks.PEERS, 37, ranks.PEERS, 74, ranks.PEERS, 40)
            reads = [(ranks.SUMMARY_SQLITE_FILTERED, summary)]
            reads += [(statement, quartiles) for statement in ranks.QUARTILES_SQLITE_FILTERED.values()]
        for template, slots in reads:
            text, values = ranks.peer_statement(template, peers, *slots)
            shown = await plan(text, *values)
            assert index in shown and not re.search(r"tw_fact_numbers_group(?!_)|SCAN tw_fact_numbers\b", shown), shown


WHOLE = st.lists(st.integers(-5_000, 5_000), min_size=20, max_size=70)
DOUBLES = st.lists(st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False), min_size=20, max_size=70)


# Each example is a paid call over a real database: a modest count, and no shrinking
# (minutes per failure); a failing example is reported as drawn.
@settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    numbers=st.one_of(WHOLE, DOUBLES),
    others=st.lists(st.integers(-10, 10), max_size=10),
    placement=st.one_of(st.none(), st.integers(0, 69), st.floats(-2e9, 2e9, allow_nan=False)),
)
async def test_statistics_equal_numpys_percentile(kernel, numbers, others, placement):
    await sql.fetch("DELETE FROM tw_fact_numbers")
    await record(kernel, numbers, kind="Tool")
    await record(kernel, others, kind="other", prefix="O")  # not peers: another kind
    body: dict = {"attribute": "item_facts", "field": "score", "peers": {"kind": "tool"}}
    placed: float | None = None
    if isinstance(placement, int):  # the number of one of the peers, named by its key
        body["key"] = f"K{placement % len(numbers)}"
        placed = float(numbers[placement % len(numbers)])
    elif isinstance(placement, float):
        body["value"] = placed = placement
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "0.01")
        resp = await client.post(PATH, json=body, headers=auth)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["value"] == placed
    assert_figures(data, [float(n) for n in numbers], placed, exact=all(float(n).is_integer() for n in numbers))


async def test_a_paid_benchmark_over_looked_up_items(kernel):
    scores = [3, 9, 1, 4, 4, 7, 12, 0, 5, 8, 2, 6, 11, 10, 4, 3, 15, 6, 9, 1, 20, 2]
    items = {
        f"A{i}": {"score": s, "count": i, "kind": "Gadget", "region": "West", "as_of": "2026-01-0" + str(1 + i % 9)}
        for i, s in enumerate(scores)
    }
    started = now_ms()
    async with http_client(kernel) as client:
        agent, auth = await credits_session(client, "1")
        await look_up(client, auth, items)
        before = await balance(client, auth)
        resp = await client.post(PATH, json={"attribute": "item_facts", "field": "score", "key": "a7"}, headers=auth)
        after = await balance(client, auth)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["tool"] == "benchmark" and data["status"] == "completed" and data["request_id"].startswith("req_")
    assert (data["attribute"], data["field"], data["peers"], data["source"]) == ("item_facts", "score", {}, None)
    assert data["value"] == 0.0 and data["population"] == "looked_up"
    assert_figures(data, [float(s) for s in scores], 0.0, exact=True)
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    assert data["coverage"] == f"22 item_facts entities looked up by callers since {today}"
    seen = dt.datetime.fromisoformat(data["as_of"].replace("Z", "+00:00")).timestamp() * 1000
    assert data["as_of"].endswith("Z") and started - 1 <= seen <= now_ms()
    assert (before, after) == ("0.890000", "0.885000")  # 22 lookups, then the benchmark charged
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "settled" and receipt["execution_status"] == "completed"
    assert (receipt["category"], receipt["subcategory"], receipt["amount_usdc"]) == ("data", "benchmark", "0.005000")


async def test_peer_filters_match_case_insensitively_and_numbers_match_their_text(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        await look_up(client, auth, {f"N{i}": {"score": i, "kind": "Gadget", "region": 2021} for i in range(21)})
        await look_up(client, auth, {f"M{i}": {"score": 100 + i, "kind": "gadget", "region": 2022} for i in range(5)})
        answers = [
            await client.post(PATH, json={"attribute": "item_facts", "field": "score", "peers": peers}, headers=auth)
            for peers in (
                {"kind": "GADGET", "region": 2021},
                {"kind": " gadget ", "region": "2021"},
                {"region": 2021.0},
            )
        ]
        wider = await client.post(
            PATH, json={"attribute": "item_facts", "field": "score", "peers": {"kind": "gAdGeT"}}, headers=auth
        )
    for resp in answers:
        assert resp.status_code == 200, resp.text
        assert resp.json()["data"]["count"] == 21 and resp.json()["data"]["max"] == 20.0
    assert answers[0].json()["data"]["peers"] == {"kind": "GADGET", "region": 2021}  # repeated as asked
    assert type(answers[2].json()["data"]["peers"]["region"]) is int  # 2021.0 is the whole number 2021
    assert (
        answers[0]
        .json()["data"]["coverage"]
        .startswith("21 item_facts entities with kind GADGET and region 2021 looked up by callers since ")
    )
    assert wider.json()["data"]["count"] == 26


async def test_private_facts_stay_out_of_the_peers(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        await look_up(client, auth, {f"P{i}": {"score": 1000 + i, "kind": "x"} for i in range(25)}, private=True)
        only_private = await client.post(PATH, json={"attribute": "item_facts", "field": "score"}, headers=auth)
        await look_up(client, auth, {f"Q{i}": {"score": i, "kind": "x"} for i in range(20)})
        public = await client.post(
            PATH, json={"attribute": "item_facts", "field": "score", "value": 1000}, headers=auth
        )
    assert only_private.status_code == 400 and only_private.json()["error"] == "no_data"
    data = public.json()["data"]
    assert (data["count"], data["max"], data["percentile"]) == (20, 19.0, 100.0)


async def test_one_source_among_several_is_named_and_read_alone(kernel):
    await record(kernel, list(range(20)), source="first source")
    await record(kernel, [1000.0] * 20, source="second source")
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(
            PATH,
            json={"attribute": "item_facts", "field": "score", "source": "second source", "value": 1000},
            headers=auth,
        )
    data = resp.json()["data"]
    assert data["source"] == "second source"
    assert (data["count"], data["min"], data["median"], data["percentile"]) == (20, 1000.0, 1000.0, 50.0)


# -- refusals before payment ------------------------------------------------------------------
async def test_refusals_before_payment_make_no_quote(kernel):
    await record(kernel, list(range(30)))
    ask = {"attribute": "item_facts", "field": "score"}
    cases = {
        "unknown attribute": ({"attribute": "weather", "field": "total"}, "invalid_input", ["attribute"]),
        "not benchmarkable": ({"attribute": "echo_words", "field": "words"}, "invalid_input", ["attribute"]),
        "undeclared field": ({**ask, "field": "price"}, "invalid_input", ["field"]),
        "undeclared peer": ({**ask, "peers": {"kind": "x", "colour": "red"}}, "invalid_input", ["peers.colour"]),
        "field and peer": (
            {**ask, "field": "price", "peers": {"colour": "red"}},
            "invalid_input",
            ["field", "peers.colour"],
        ),
        "key and value": ({**ask, "key": "K1", "value": 3}, "invalid_request", ["key", "value"]),
        "six filters": ({**ask, "peers": {f"p{i}": i for i in range(6)}}, "invalid_request", ["peers"]),
        "six filters, key and value": (
            {**ask, "peers": {f"p{i}": i for i in range(6)}, "key": "K1", "value": 3},
            "invalid_request",
            ["peers", "key", "value"],
        ),
        "wrong shapes": (
            {"attribute": 7, "field": "score", "peers": ["kind"], "value": "high"},
            "invalid_request",
            ["attribute", "peers", "value"],
        ),
        "peer value shape": ({**ask, "peers": {"kind": True}}, "invalid_request", ["peers.kind"]),
        "missing field": ({"attribute": "item_facts"}, "invalid_request", ["field"]),
        "unknown input field": ({**ask, "limit": 3}, "invalid_request", ["limit"]),
    }
    async with http_client(kernel) as client:
        answers = {name: await client.post(PATH, json=body) for name, (body, _, _) in cases.items()}
        sanity = await client.post(PATH, json=ask)
    for name, (_, code, fields) in cases.items():
        resp = answers[name]
        assert resp.status_code == 400, (name, resp.text)
        body = resp.json()
        assert body["error"] == code, (name, body)
        assert sorted(d["field"] for d in body["details"]) == sorted(fields), (name, body)
        if code == "invalid_input":
            assert body["benchmarkable"] == [
                {"attribute": "item_facts", "fields": ["score", "count"], "peers": ["kind", "region"]}
            ], name
        else:
            assert "benchmarkable" not in body
    assert sanity.status_code == 402  # the same tool quotes a valid request: the refusals above came first
    assert await count_quotes(kernel) == 1


async def test_nothing_recorded_is_no_data_before_payment(kernel):
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"attribute": "item_facts", "field": "score"})
    assert resp.status_code == 400
    assert resp.json()["error"] == "no_data" and resp.json()["details"][0]["field"] == "attribute"
    assert await count_quotes(kernel) == 0


# -- refusals after payment -------------------------------------------------------------------
async def refused_and_refunded(kernel, client, auth, body: dict, code: str) -> dict:
    before = await balance(client, auth)
    resp = await client.post(PATH, json=body, headers=auth)
    assert resp.status_code == 400, resp.text
    answer = resp.json()
    assert answer["error"] == code and answer["request_id"].startswith("req_"), answer
    assert await balance(client, auth) == before
    receipt = await kernel.receipts.get(answer["receipt_id"])
    assert receipt["execution_status"] == "failed" and receipt["status"] == "refunded"
    return answer


async def test_too_few_peers_is_refunded_with_count_minimum_and_population(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        await look_up(client, auth, {f"F{i}": {"score": i, "kind": "rare" if i < 19 else "common"} for i in range(25)})
        answer = await refused_and_refunded(
            kernel,
            client,
            auth,
            {"attribute": "item_facts", "field": "score", "peers": {"kind": "RARE"}},
            "too_few_peers",
        )
        nothing = await refused_and_refunded(
            kernel, client, auth, {"attribute": "item_facts", "field": "count"}, "too_few_peers"
        )
    assert (answer["count"], answer["minimum"], answer["population"]) == (19, 20, "looked_up")
    assert nothing["count"] == 0


async def test_too_few_peers_over_x402_is_not_settled(kernel):
    from eth_account import Account

    await record(kernel, [1.0] * 5)
    payer = Account.create()
    body = {"attribute": "item_facts", "field": "score"}
    async with http_client(kernel) as client:
        funded = await client.post(
            "/v1/tools/internal/chain/fund", json={"address": payer.address, "amount": "1"}, headers=OPERATOR
        )
        assert funded.status_code == 200
        quote = await client.post(PATH, json=body)
        assert quote.status_code == 402
        refused = await client.post(
            PATH, json=body, headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
        )
        chain = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()["on_chain_balance"]
    assert refused.status_code == 400 and refused.json()["error"] == "too_few_peers" and refused.json()["count"] == 5
    assert chain == "1.000000"
    receipt = await kernel.receipts.get(refused.json()["receipt_id"])
    assert receipt["status"] == "not_charged" and receipt["execution_status"] == "failed"


async def test_a_key_outside_the_peers_is_not_in_population_and_refunded(kernel):
    await record(kernel, list(range(20)), kind="a")
    await record(kernel, [5.0], kind="b", prefix="B")
    await record(kernel, [7.0], kind="a", prefix="C", field="count")  # C0 has a count but no score
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        outside = await refused_and_refunded(
            kernel,
            client,
            auth,
            {"attribute": "item_facts", "field": "score", "peers": {"kind": "a"}, "key": "B0"},
            "not_in_population",
        )
        unknown = await refused_and_refunded(
            kernel, client, auth, {"attribute": "item_facts", "field": "score", "key": "Z9"}, "not_in_population"
        )
        no_number = await refused_and_refunded(
            kernel, client, auth, {"attribute": "item_facts", "field": "score", "key": "C0"}, "not_in_population"
        )
        lower = await client.post(PATH, json={"attribute": "item_facts", "field": "score", "key": "k3"}, headers=auth)
    assert outside["details"] == [{"field": "key", "message": "B0 is outside the peer set these filters select"}]
    assert "no recorded number in score" in unknown["message"] and "no recorded number in score" in no_number["message"]
    assert lower.status_code == 200 and lower.json()["data"]["value"] == 3.0  # keys are kept in capitals


async def test_several_sources_and_none_named_is_refunded_with_the_sources(kernel):
    await record(kernel, list(range(20)), source="first source")
    await record(kernel, list(range(20)), source="second source")
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        several = await refused_and_refunded(
            kernel, client, auth, {"attribute": "item_facts", "field": "score"}, "invalid_input"
        )
        unknown = await refused_and_refunded(
            kernel, client, auth, {"attribute": "item_facts", "field": "score", "source": "third"}, "invalid_input"
        )
    assert several["sources"] == unknown["sources"] == ["first source", "second source"]
    assert several["details"][0]["field"] == "source"


# -- the MCP front ------------------------------------------------------------------------------
async def test_benchmark_over_mcp(kernel):
    await record(kernel, [float(n) for n in range(40)])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "0.05")
    mcp = build_server(kernel, identity=BearerIdentity(auth["Authorization"][len("Bearer ") :]))
    async with Client(mcp.server) as client:
        result = await client.call_tool("benchmark", {"attribute": "item_facts", "field": "score", "value": 10})
        refused = await client.call_tool(
            "benchmark", {"attribute": "item_facts", "field": "score", "key": "K1", "value": 1}
        )
    assert result.is_error is False, result.structured_content
    data = result.structured_content
    assert (
        data["tool"] == "benchmark" and data["count"] == 40 and data["median"] == 19.5 and data["percentile"] == 26.25
    )
    assert refused.is_error and refused.structured_content["error"] == "invalid_request"


# -- real recorded NHTSA answers ------------------------------------------------------------------
COMPLAINTS_URL = "https://api.nhtsa.gov/complaints/complaintsByVehicle"
# The real NHTSA complaint recordings we have (plugins/vehicles/tests/fixtures/README.md):
# the current API's 2021 Honda Accord answer and two answers of the retired API.
RECORDED = (
    ("nhtsa_complaints", "complaintsByVehicle_honda_accord_2021_trimmed.json"),
    ("nhtsa_complaints", "legacy_webapi_2015", "complaints_vehicle_1998_bmw_318.json"),
    ("nhtsa_complaints", "legacy_webapi_2015", "complaints_odinumber_10457576.json"),
)
VEHICLES = [
    (make, model, year)
    for make, model in (
        ("Honda", "Accord"),
        ("Honda", "Civic"),
        ("Toyota", "Camry"),
        ("Toyota", "RAV4"),
        ("Ford", "F-150"),
        ("Ford", "Escape"),
        ("BMW", "318i"),
        ("Subaru", "Outback"),
    )
    for year in (2019, 2020, 2021)
]


def nhtsa_replay():
    """Only three real complaint recordings exist, fewer than the 20 entities a benchmark
    needs: each of the 24 vehicle queries is answered, unchanged, by one of them in turn.
    The numbers compared are therefore real NHTSA figures (totals 199, 3 and 1), each
    standing for several vehicles."""
    from tests.support.replay import Recording, Replay, recorded_file

    bodies = [recorded_file("vehicles", *parts).read_bytes() for parts in RECORDED]
    return Replay(
        *(
            Recording(
                "GET",
                COMPLAINTS_URL,
                {"make": make.lower(), "model": model.lower(), "modelYear": str(year)},
                bodies[i % len(bodies)],
            )
            for i, (make, model, year) in enumerate(VEHICLES)
        )
    )


async def test_benchmark_over_replayed_nhtsa_complaints(kernel_factory):
    """Benchmark over 24 vehicle_complaints facts recorded from replayed real NHTSA answers
    (three recordings replayed under 24 make/model/year queries, see `nhtsa_replay`): the
    figures equal numpy's over the totals the lookups answered; a make with too few
    vehicles is refused as too_few_peers and refunded."""
    replay = nhtsa_replay()
    kernel = await kernel_factory(installed={"tollway_vehicles"}, transport=replay)
    totals: dict[str, float] = {}
    crashes: dict[str, float] = {}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        for make, model, year in VEHICLES:
            resp = await client.post(
                "/v1/tools/lookup/vehicle-complaints",
                json={"make": make, "model": model, "model_year": year},
                headers=auth,
            )
            assert resp.status_code == 200, resp.text
            result = resp.json()["data"]["result"]
            key = f"{make.upper()}|{model.upper()}|{year}"
            totals[key], crashes[key] = float(result["total"]), float(result["crashes"])
        everything = await client.post(
            PATH, json={"attribute": "vehicle_complaints", "field": "total", "key": "HONDA|ACCORD|2021"}, headers=auth
        )
        crash_counts = await client.post(
            PATH, json={"attribute": "vehicle_complaints", "field": "crashes", "value": 1}, headers=auth
        )
        before = await balance(client, auth)
        few = await client.post(
            PATH,
            json={"attribute": "vehicle_complaints", "field": "total", "peers": {"make": "honda", "model_year": 2021}},
            headers=auth,
        )
        after = await balance(client, auth)
    assert not replay.unexpected and len(replay.served) == len(VEHICLES)
    assert set(totals.values()) == {199.0, 3.0, 1.0}  # NHTSA's own counts in the three recordings
    data = everything.json()["data"]
    assert everything.status_code == 200, everything.text
    assert data["value"] == totals["HONDA|ACCORD|2021"] and data["source"] is None
    assert_figures(data, list(totals.values()), totals["HONDA|ACCORD|2021"], exact=True)
    assert data["coverage"].startswith("24 vehicle_complaints entities looked up by callers since ")
    assert_figures(crash_counts.json()["data"], list(crashes.values()), 1.0, exact=True)
    assert few.status_code == 400, few.text
    assert (few.json()["error"], few.json()["count"], few.json()["minimum"], few.json()["population"]) == (
        "too_few_peers",
        2,
        20,
        "looked_up",
    )
    assert before == after
    receipt = await kernel.receipts.get(few.json()["receipt_id"])
    assert receipt["execution_status"] == "failed" and receipt["status"] == "refunded"
