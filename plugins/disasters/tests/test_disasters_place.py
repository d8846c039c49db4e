"""Tests for `place_disasters`, replaying OpenFEMA's real recorded answer.

The only recording (`fixtures/openfema/`, see `fixtures/README.md`) answers the
*unfiltered* query (`$top` 1000, 2022-10-28). No state-filtered recording exists,
so the transport below derives the answer to `$filter=state eq 'TX'` from it:
it keeps the recorded rows whose `state` is TX, projects them to the `$select`ed
keys, orders them as `$orderby` asks, applies `$skip`/`$top`, and wraps them with
the recorded `metadata` object. Every value served is FEMA's recorded value. The
unfiltered file is also parsed byte-for-byte as recorded. No test reaches the internet.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_disasters import openfema
from tollway_disasters.tool import (
    PlaceDisastersAnswer,
    PlaceDisastersInput,
    check,
    facts,
    place_disasters,
    place_key,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
RECORDED = FIXTURES / "openfema" / "DisasterDeclarationsSummaries_v2_top1000_nofilter_2022-10-28.json"
URL = "https://www.fema.gov/api/open/v2/DisasterDeclarationsSummaries"


def recorded() -> dict:
    return json.loads(RECORDED.read_bytes())


def replay_state(state: str = "TX", *, expect_url: str = URL):
    """A client answering OpenFEMA's state query from the recorded rows (see module doc)."""
    doc = recorded()
    fields = openfema.SELECT.split(",")
    rows = [{k: r.get(k) for k in fields} for r in doc[openfema.ENTITY] if r["state"] == state]
    rows.sort(key=lambda r: (r["declarationDate"], r["disasterNumber"]), reverse=True)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == expect_url
        params = dict(request.url.params)
        skip, top = int(params.pop("$skip")), int(params.pop("$top"))
        assert params == {
            "$filter": f"state eq '{state}'",
            "$select": openfema.SELECT,
            "$orderby": "declarationDate desc,disasterNumber desc",
        }
        body = {"metadata": doc["metadata"], openfema.ENTITY: rows[skip : skip + top]}
        return httpx.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def answering(status: int, body: bytes, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers=headers or {})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def value(**fields: object) -> PlaceDisastersInput:
    return msgspec.convert({"state": "TX", **fields}, PlaceDisastersInput, strict=True)


async def call(http: httpx.AsyncClient, v: PlaceDisastersInput | None = None, **settings: str) -> PlaceDisastersAnswer:
    async with http:
        ctx = ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
        return await place_disasters.run(v or value(), ctx)


# --- the recorded rows ----------------------------------------------------------------


async def test_texas_counts_declarations_not_rows() -> None:
    http, seen = replay_state()
    answer = await call(http)
    assert len(seen) == 1
    r = answer.result
    assert (r.state, r.county) == ("TX", None)
    assert r.total == 16  # 17 TX rows; disaster 5444 names two counties
    assert r.by_incident_type == {"Fire": 16}
    assert r.by_declaration_type == {"FM": 16}
    assert len(r.declarations) == 10  # default limit
    first = r.declarations[0]
    assert (first.disaster_number, first.fema_declaration_string, first.declared_on) == (
        5444,
        "FM-5444-TX",
        "2022-07-19",
    )
    assert (first.incident_type, first.title) == ("Fire", "CHALK MOUNTAIN FIRE")
    assert (first.incident_began_on, first.incident_ended_on) == ("2022-07-18", None)
    assert (first.designated_area_count, first.designated_areas) == (2, ["Hood (County)", "Somervell (County)"])
    dates = [d.declared_on for d in r.declarations]
    assert dates == sorted(dates, reverse=True)
    ev = answer.evidence
    assert (ev.source, ev.source_kind, ev.as_of) == ("FEMA", "public", "2022-07-20")
    assert ev.retrieved_at.endswith("Z")


@pytest.mark.parametrize("county", ["Hood", "hood county", "Hood (County)", "  HOOD  "])
async def test_county_narrows_to_declarations_naming_it(county: str) -> None:
    http, _ = replay_state()
    r = (await call(http, value(county=county, limit=50))).result
    assert r.total == 2
    assert [d.disaster_number for d in r.declarations] == [5444, 5429]
    assert r.declarations[1].title == "BIG L FIRE"
    assert [d.designated_areas for d in r.declarations] == [["Hood (County)"], ["Hood (County)"]]


async def test_a_kind_that_does_not_match_and_an_unknown_county_are_total_zero() -> None:
    for county in ("Hood Parish", "Travis"):
        http, _ = replay_state()
        answer = await call(http, value(county=county))
        assert (answer.result.total, answer.result.by_incident_type, answer.result.declarations) == (0, {}, [])
        assert answer.evidence.as_of is None


async def test_pages_with_skip_until_a_short_page() -> None:
    http, seen = replay_state()
    async with http:
        ctx = ToolContext(request_id="req_test", agent_id=None, http=http, settings={})
        rows = await openfema.fetch_state_rows(ctx, "TX", page_size=5)
    assert len(rows) == 17
    assert [(r.url.params["$skip"], r.url.params["$top"]) for r in seen] == [
        ("0", "5"),
        ("5", "5"),
        ("10", "5"),
        ("15", "5"),
    ]


def test_the_unfiltered_recording_parses_as_recorded() -> None:
    rows = openfema.parse_page(msgspec.json.decode(RECORDED.read_bytes()))
    assert len(rows) == 1000
    s = openfema.summarize(rows)
    assert s.rows == 1000
    assert s.total == len({r["disasterNumber"] for r in rows})
    assert sum(s.by_incident_type.values()) == s.total
    assert next(iter(s.by_incident_type)) == "Fire"  # the most frequent first
    assert s.declarations[0].declared_on == "2022-07-19"
    assert s.last_refresh is not None


@pytest.mark.parametrize(
    ("area", "split"),
    [
        ("Hood (County)", ("hood", "county")),
        ("Statewide", ("statewide", None)),
        ("Sisseton (Sisseton) Indian Reservation", ("sisseton (sisseton) indian reservation", None)),
        ("Bethel (Census Area)", ("bethel", "census area")),
    ],
)
def test_split_area(area: str, split: tuple[str, str | None]) -> None:
    assert openfema.split_area(area) == split


def test_split_query_reads_a_trailing_kind_word() -> None:
    assert openfema.split_query("Hood County") == ("hood", "county")
    assert openfema.split_query("Bethel Census Area") == ("bethel", "census area")
    assert openfema.split_query("Orleans") == ("orleans", None)


async def test_base_url_setting_points_at_a_mirror() -> None:
    http, seen = replay_state(expect_url="http://mirror.test/fema/v2/DisasterDeclarationsSummaries")
    await call(http, openfema_api_url="http://mirror.test/fema/")
    assert len(seen) == 1


async def test_base_url_from_the_environment_through_the_kernel(kernel_factory) -> None:
    kernel = await kernel_factory(
        installed={"tollway_disasters"}, env={"TOLLWAY_DISASTERS_OPENFEMA_API_URL": "http://env.test/open"}
    )
    http, seen = replay_state(expect_url="http://env.test/open/v2/DisasterDeclarationsSummaries")
    await call(http, **kernel.family_settings("disasters"))
    assert len(seen) == 1


# --- upstream failures -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, b"{}"),
        (503, b""),
        (404, b"<html/>"),
        (400, b'{"error":"bad filter"}'),
        (200, b"<html>down</html>"),
        (200, b'{"metadata":{}}'),
        (200, b"[]"),
    ],
)
async def test_upstream_failures_are_provider_unavailable(status: int, body: bytes) -> None:
    with pytest.raises(ToolError) as info:
        await call(answering(status, body))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


async def test_timeout_is_provider_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ToolError) as info:
        await call(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    assert info.value.code == "provider_unavailable"


async def test_429_is_rate_limited() -> None:
    with pytest.raises(ToolError) as info:
        await call(answering(429, b"slow down", {"retry-after": "7"}))
    assert (info.value.code, info.value.status, info.value.details["retry_after"]) == ("rate_limited", 503, 7)


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_are_provider_auth(status: int) -> None:
    with pytest.raises(ToolError) as info:
        await call(answering(status, b'{"error":"forbidden"}'))
    assert (info.value.code, info.value.status, info.value.details["upstream_status"]) == ("provider_auth", 503, status)


# --- input rules ------------------------------------------------------------------------


def test_state_must_be_a_us_code() -> None:
    check(value(state="tx"))
    check(value(state="PR"))
    with pytest.raises(FieldError) as info:
        check(value(state="XX"))
    assert info.value.field == "state"


@pytest.mark.parametrize(
    "fields",
    [
        {"state": "T"},
        {"state": "TEX"},
        {"state": "T1"},
        {"county": "H"},
        {"county": "Hood; drop"},
        {"county": "x" * 81},
        {"limit": 0},
        {"limit": 51},
        {"memo_typo": 1},
    ],
)
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


def test_check_refuses_a_county_without_letters() -> None:
    with pytest.raises(FieldError) as info:
        check(value(county=" . "))
    assert info.value.field == "county"


async def test_bad_state_is_400_before_payment(kernel_factory) -> None:
    from tollway.testing import count_quotes, count_receipts, http_client

    kernel = await kernel_factory(installed={"tollway_disasters"})
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/place-disasters", json={"state": "ZZ"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["details"][0]["field"] == "state"
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


# --- facts, price, snapshot ---------------------------------------------------------------


async def test_answer_maps_to_one_recordable_fact() -> None:
    http, _ = replay_state()
    v = value(state="tx", limit=1)
    (fact,) = facts(v, await call(http, v))
    assert (fact.attribute, fact.key, fact.source, fact.as_of) == ("place_disasters", "TX", "FEMA", "2022-07-20")
    assert fact.value == {"total": 16, "by_incident_type": {"Fire": 16}, "by_declaration_type": {"FM": 16}}
    assert place_key(value(county="Hood County")) == "TX|HOOD (COUNTY)"
    assert place_key(value(county=" hood ")) == "TX|HOOD"
    assert place_disasters.quote(v) == 5000  # 0.005 USDC


async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay_state()
    answer = msgspec.to_builtins(await call(http, value(limit=3)))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    assert answer == snapshot
