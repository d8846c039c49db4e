"""Tests for `vehicle_complaints`, replaying NHTSA's real recorded answers.

The recorded responses in `fixtures/nhtsa_complaints/` (see `fixtures/README.md`)
are served unchanged through an `httpx.MockTransport` whose handler first asserts
the exact URL and query NHTSA would receive. No test reaches the internet.
The current-API recording is trimmed at source: `count` 199 with 2 results kept.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_vehicles import complaints
from tollway_vehicles.tool_complaints import (
    VEHICLE_COMPLAINTS,
    ComplaintsAnswer,
    VehicleComplaintsInput,
    check,
    facts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
COMPLAINTS = FIXTURES / "nhtsa_complaints"
HONDA = COMPLAINTS / "complaintsByVehicle_honda_accord_2021_trimmed.json"
BMW_318 = COMPLAINTS / "legacy_webapi_2015" / "complaints_vehicle_1998_bmw_318.json"
BMW_ODI = COMPLAINTS / "legacy_webapi_2015" / "complaints_odinumber_10457576.json"
# No recorded empty answer exists (data README); this is the documented shape with no results.
EMPTY = b'{"count":0,"message":"Results returned successfully","results":[]}'
URL = "https://api.nhtsa.gov/complaints/complaintsByVehicle"


def replay(
    body: bytes,
    *,
    status: int = 200,
    expect_url: str = URL,
    expect_query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    query = expect_query or {"make": "honda", "model": "accord", "modelYear": "2021"}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == expect_url
        assert dict(request.url.params) == query
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def value(**fields: object) -> VehicleComplaintsInput:
    data = {"make": "Honda", "model": "Accord", "model_year": 2021, **fields}
    return msgspec.convert(data, VehicleComplaintsInput, strict=True)


async def call(http: httpx.AsyncClient, v: VehicleComplaintsInput | None = None, **settings: str) -> ComplaintsAnswer:
    async with http:
        ctx = ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
        return await VEHICLE_COMPLAINTS.run(v or value(), ctx)


async def test_honda_accord_2021_parses_recorded_answer() -> None:
    http, seen = replay(HONDA.read_bytes())
    answer = await call(http)
    assert len(seen) == 1
    r = answer.result
    assert (r.make, r.model, r.model_year) == ("Honda", "Accord", 2021)
    assert r.total == 199  # NHTSA's own count; the recording kept 2 results
    assert r.complaints_counted == 2
    assert (r.crashes, r.fires, r.injuries, r.deaths) == (0, 0, 0, 0)
    assert [c.odi_number for c in r.complaints] == [11741975, 11741504]  # filed 06/04 then 06/02
    first = r.complaints[0]
    assert (first.filed_on, first.incident_on) == ("2026-06-04", "2026-05-28")  # MM/DD/YYYY
    assert first.components == "ENGINE"
    assert first.summary.startswith("I am filing a complaint regarding the premature head gasket")
    assert first.manufacturer == "Honda (American Honda Motor Co.)"
    assert (first.crash, first.fire, first.injuries, first.deaths) == (False, False, 0, 0)
    ev = answer.evidence
    assert (ev.source, ev.source_kind, ev.as_of) == ("NHTSA", "public", "2026-06-04")
    assert ev.retrieved_at.endswith("Z")


async def test_limit_truncates_the_list_but_not_the_counts() -> None:
    http, _ = replay(HONDA.read_bytes())
    answer = await call(http, value(limit=1))
    assert [c.odi_number for c in answer.result.complaints] == [11741975]
    assert (answer.result.total, answer.result.complaints_counted) == (199, 2)
    assert answer.evidence.as_of == "2026-06-04"


async def test_legacy_shape_counts_crashes_and_orders_most_recent_first() -> None:
    http, _ = replay(BMW_318.read_bytes(), expect_query={"make": "bmw", "model": "318", "modelYear": "1998"})
    answer = await call(http, value(make="BMW", model="318", model_year=1998))
    r = answer.result
    assert (r.total, r.complaints_counted, r.crashes, r.fires, r.injuries, r.deaths) == (3, 3, 2, 0, 0, 0)
    # Filed 1999-06-17, 1999-09-29 and 1998-05-05 (legacy /Date(ms-offset)/).
    assert [c.odi_number for c in r.complaints] == [849082, 707631, 822392]
    assert [c.filed_on for c in r.complaints] == ["1999-09-29", "1999-06-17", "1998-05-05"]
    assert r.complaints[0].components == "AIR BAGS:FRONTAL | AIR BAGS:FRONTAL | AIR BAGS:FRONTAL"
    assert r.complaints[0].crash is True
    assert answer.evidence.as_of == "1999-09-29"


def test_legacy_odi_number_file_parses() -> None:
    page = complaints.parse_body(msgspec.json.decode(BMW_ODI.read_bytes()))
    (c,) = page.complaints
    assert (page.total, c.odi_number, c.components) == (1, 10457576, "SEATS")
    assert (c.incident_on, c.filed_on) == ("2012-04-26", "2012-05-05")


def test_counts_add_injuries_and_deaths_over_every_complaint_sent() -> None:
    body = {
        "count": 5,
        "results": [
            {"odiNumber": 1, "crash": True, "fire": True, "numberOfInjuries": 2, "numberOfDeaths": 1},
            {"odiNumber": 2, "crash": True, "fire": False, "numberOfInjuries": 1, "numberOfDeaths": 0},
            {"odiNumber": 3, "crash": False, "fire": True, "numberOfInjuries": None},
        ],
    }
    page = complaints.parse_body(body)
    assert page.total == 5
    assert [(c.crash, c.fire, c.injuries, c.deaths) for c in page.complaints] == [
        (True, True, 2, 1),
        (True, False, 1, 0),
        (False, True, 0, 0),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("06/04/2026", "2026-06-04"),
        ("12/31/2020", "2020-12-31"),
        ("13/01/2020", None),
        ("/Date(929592000000-0400)/", "1999-06-17"),
        ("2021-01-02", "2021-01-02"),
        ("", None),
        (None, None),
    ],
)
def test_complaint_dates_are_month_first(raw: str | None, expected: str | None) -> None:
    assert complaints.parse_complaint_date(raw) == expected


async def test_base_url_setting_is_shared_with_recalls() -> None:
    http, seen = replay(HONDA.read_bytes(), expect_url="http://mirror.test/nhtsa/complaints/complaintsByVehicle")
    await call(http, nhtsa_api_url="http://mirror.test/nhtsa/")
    assert len(seen) == 1


async def test_empty_and_4xx_saying_no_results_are_total_zero() -> None:
    for status in (200, 400, 404):
        http, _ = replay(EMPTY, status=status)
        answer = await call(http)
        assert (answer.result.total, answer.result.complaints, answer.evidence.as_of) == (0, [], None)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, b"{}"),
        (502, b"<html>Bad Gateway</html>"),
        (503, b""),
        (404, b"<html>Not Found</html>"),
        (200, b"<html>maintenance</html>"),
        (200, b'{"count":3}'),
        (200, b"[]"),
    ],
)
async def test_upstream_failures_are_provider_unavailable(status: int, body: bytes) -> None:
    http, _ = replay(body, status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


async def test_refused_credentials_are_provider_auth() -> None:
    """Even with a body saying "no complaints": only 400/404 may mean an empty answer."""
    for status in (401, 403):
        http, _ = replay(EMPTY, status=status)
        with pytest.raises(ToolError) as info:
            await call(http)
        assert (info.value.code, info.value.status, info.value.details) == (
            "provider_auth",
            503,
            {"upstream_status": status},
        )


async def test_timeout_is_provider_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ToolError) as info:
        await call(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


async def test_429_is_rate_limited() -> None:
    http, _ = replay(b"Too Many Requests", status=429, headers={"retry-after": "12"})
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status, info.value.details["retry_after"]) == ("rate_limited", 503, 12)


@pytest.mark.parametrize(
    "fields", [{"make": "H"}, {"model": "Acc_ord"}, {"model_year": 1949}, {"limit": 0}, {"limit": 51}, {"vin": "x"}]
)
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


def test_check_uses_the_recalls_rules() -> None:
    import datetime as _dt

    with pytest.raises(FieldError) as info:
        check(value(model_year=_dt.datetime.now(_dt.UTC).year + 2))
    assert info.value.field == "model_year"
    assert VEHICLE_COMPLAINTS.quote(value()) == 5000  # 0.005 USDC


async def test_answer_maps_to_one_recordable_fact() -> None:
    http, _ = replay(HONDA.read_bytes())
    v = value(make=" honda ", model="accord", limit=1)
    (fact,) = facts(v, await call(http, v))
    assert (fact.attribute, fact.key, fact.source, fact.as_of) == (
        "vehicle_complaints",
        "HONDA|ACCORD|2021",
        "NHTSA",
        "2026-06-04",
    )
    assert fact.value == {"total": 199, "crashes": 0, "fires": 0, "injuries": 0, "deaths": 0, "complaints_counted": 2}


async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay(HONDA.read_bytes())
    answer = msgspec.to_builtins(await call(http))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    assert answer == snapshot
