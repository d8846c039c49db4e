"""Tests for `vehicle_recalls`, replaying NHTSA's real recorded answers.

The recorded responses in `fixtures/nhtsa_recalls/` (see `fixtures/README.md`) are served through an `httpx.MockTransport`: its handler first asserts
the exact URL and query NHTSA would receive (`GET https://api.nhtsa.gov/recalls/
recallsByVehicle?make=honda&model=accord&modelYear=2021`), then returns the
recorded bytes unchanged. No test reaches the internet.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_vehicles import nhtsa
from tollway_vehicles.tool import VEHICLE_RECALLS, RecallAnswer, VehicleRecallsInput, check

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
RECALLS = FIXTURES / "nhtsa_recalls"
HONDA = RECALLS / "recallsByVehicle_honda_accord_2021_trimmed.json"
GALANT = RECALLS / "legacy_webapi_2015" / "recalls_vehicle_1998_mitsubishi_galant.json"
BMW_CAMPAIGN = RECALLS / "legacy_webapi_2015" / "recalls_campaign_12V176000.json"
# No recorded empty answer exists (data README); this is the documented shape with no results.
EMPTY = b'{"Count":0,"Message":"Results returned successfully","results":[]}'


def replay(
    body: bytes,
    *,
    status: int = 200,
    expect_url: str = "https://api.nhtsa.gov/recalls/recallsByVehicle",
    expect_query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """A client whose transport checks the request NHTSA would get and answers `body`."""
    seen: list[httpx.Request] = []
    query = expect_query or {"make": "honda", "model": "accord", "modelYear": "2021"}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == expect_url
        assert dict(request.url.params) == query
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def failing(exc: Callable[[httpx.Request], Exception]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def ctx(http: httpx.AsyncClient, **settings: str) -> ToolContext:
    return ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)


def value(**fields: object) -> VehicleRecallsInput:
    data = {"make": "Honda", "model": "Accord", "model_year": 2021, **fields}
    return msgspec.convert(data, VehicleRecallsInput, strict=True)


async def call(http: httpx.AsyncClient, v: VehicleRecallsInput | None = None, **settings: str) -> RecallAnswer:
    async with http:
        return await VEHICLE_RECALLS.run(v or value(), ctx(http, **settings))


# --- the current API, recorded ------------------------------------------------


@pytest.mark.asyncio
async def test_honda_accord_2021_parses_recorded_answer() -> None:
    http, seen = replay(HONDA.read_bytes())
    answer = await call(http)
    assert len(seen) == 1
    result = answer.result
    assert (result.make, result.model, result.model_year) == ("Honda", "Accord", 2021)
    assert result.total == 4  # NHTSA's Count; the recording kept only 2 results
    assert [r.campaign_number for r in result.recalls] == ["21V900000", "24V064000"]
    assert [r.reported_on for r in result.recalls] == ["2021-11-18", "2024-02-01"]
    first = result.recalls[0]
    assert first.component == "SEAT BELTS:REAR/OTHER:RETRACTOR"
    assert first.manufacturer == "Honda (American Honda Motor Co.)"
    assert first.consequence.startswith("An unsecured child restraint system")
    assert first.remedy.startswith("Dealers will replace the second-row")
    assert first.notes.startswith("Owners may also contact")
    assert (first.park_it, first.park_outside, first.over_the_air_fix) == (False, False, False)
    ev = answer.evidence
    assert (ev.source, ev.source_kind, ev.as_of) == ("NHTSA", "public", "2024-02-01")
    assert ev.retrieved_at.endswith("Z")


@pytest.mark.asyncio
async def test_limit_truncates_but_total_and_as_of_come_from_source() -> None:
    http, _ = replay(HONDA.read_bytes())
    answer = await call(http, value(limit=1))
    assert [r.campaign_number for r in answer.result.recalls] == ["21V900000"]
    assert answer.result.total == 4
    assert answer.evidence.as_of == "2024-02-01"


@pytest.mark.asyncio
async def test_query_is_trimmed_single_spaced_lower_case_and_echo_is_trimmed() -> None:
    http, _ = replay(HONDA.read_bytes())
    answer = await call(http, value(make="  HONDA ", model=" Accord  "))
    assert (answer.result.make, answer.result.model) == ("HONDA", "Accord")


@pytest.mark.asyncio
async def test_base_url_setting_points_at_a_mirror() -> None:
    http, seen = replay(HONDA.read_bytes(), expect_url="http://127.0.0.1:8099/nhtsa/recalls/recallsByVehicle")
    await call(http, nhtsa_api_url="http://127.0.0.1:8099/nhtsa/")
    assert len(seen) == 1


@pytest.mark.asyncio
async def test_base_url_from_the_environment_through_the_kernel(kernel_factory) -> None:
    kernel = await kernel_factory(
        installed={"tollway_vehicles"}, env={"TOLLWAY_VEHICLES_NHTSA_API_URL": "http://mirror.test"}
    )
    http, seen = replay(HONDA.read_bytes(), expect_url="http://mirror.test/recalls/recallsByVehicle")
    await call(http, **kernel.family_settings("vehicles"))
    assert len(seen) == 1


# --- the legacy shape (webapi.nhtsa.gov, before 2020), recorded -----------------


@pytest.mark.asyncio
async def test_legacy_shape_from_a_mirror_parses() -> None:
    http, _ = replay(GALANT.read_bytes(), expect_query={"make": "mitsubishi", "model": "galant", "modelYear": "1998"})
    answer = await call(http, value(make="Mitsubishi", model="Galant", model_year=1998))
    result = answer.result
    assert result.total == 2
    first, second = result.recalls
    assert first.campaign_number == "00V421001"
    assert first.reported_on == "2000-12-18"  # /Date(977115600000-0500)/
    assert second.reported_on == "2007-07-26"  # /Date(1185422400000-0400)/
    assert first.consequence.startswith("THIS CONDITION COULD CAUSE")  # from "Conequence"
    assert second.consequence == "IN THE PRESENCE OF AN IGNITION SOURCE, A FUEL LEAK COULD RESULT IN A FIRE."
    assert first.manufacturer == "MITSUBISHI AMERICA"
    assert (first.park_it, first.park_outside, first.over_the_air_fix) == (False, False, False)
    assert answer.evidence.as_of == "2007-07-26"


def test_legacy_campaign_file_parses() -> None:
    page = nhtsa.parse_body(msgspec.json.decode(BMW_CAMPAIGN.read_bytes()))
    assert page.total == 1
    (recall,) = page.recalls
    assert recall.campaign_number == "12V176000"
    assert recall.reported_on == "2012-04-20"
    assert recall.consequence.startswith("IN THE EVENT OF A VEHICLE CRASH")
    assert recall.summary.endswith('"HEAD RESTRAINTS."')  # trailing spaces trimmed


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("18/11/2021", "2021-11-18"),
        ("01/02/2024", "2024-02-01"),
        ("/Date(977115600000-0500)/", "2000-12-18"),
        ("/Date(977115600000)/", "2000-12-18"),
        ("2024-02-01", "2024-02-01"),
        ("31/02/2024", None),
        ("", None),
        (None, None),
        ("soon", None),
    ],
)
def test_parse_date(raw: str | None, expected: str | None) -> None:
    assert nhtsa.parse_date(raw) == expected


def test_empty_manufacturer_and_missing_fields_become_null_and_false() -> None:
    recall = nhtsa.parse_recall({"NHTSACampaignNumber": "21V900000", "Manufacturer": "", "parkIt": True})
    assert recall.manufacturer is None
    assert recall.summary is None and recall.reported_on is None
    assert (recall.park_it, recall.park_outside, recall.over_the_air_fix) == (True, False, False)


# --- no results and upstream failures ------------------------------------------


@pytest.mark.asyncio
async def test_empty_results_is_total_zero() -> None:
    http, _ = replay(EMPTY)
    answer = await call(http)
    assert answer.result.total == 0
    assert answer.result.recalls == []
    assert answer.evidence.as_of is None


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [400, 404])
async def test_4xx_saying_no_results_is_total_zero(status: int) -> None:
    http, _ = replay(EMPTY, status=status)
    answer = await call(http)
    assert answer.result.total == 0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, b'{"Message":"An error has occurred."}'),
        (502, b"<html>Bad Gateway</html>"),
        (503, b""),
        (404, b"<html>Not Found</html>"),
        (400, b'{"Count":0,"Message":"Invalid parameters"}'),
        (200, b"<html>maintenance</html>"),
        (200, b'{"Count":3,"Message":"Results returned successfully"}'),
        (200, b"[]"),
    ],
)
async def test_upstream_failures_are_provider_unavailable(status: int, body: bytes) -> None:
    http, _ = replay(body, status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "exc",
    [
        lambda r: httpx.ReadTimeout("timed out", request=r),
        lambda r: httpx.ConnectTimeout("timed out", request=r),
        lambda r: httpx.ConnectError("refused", request=r),
    ],
)
async def test_timeouts_and_connection_errors_are_provider_unavailable(exc) -> None:
    with pytest.raises(ToolError) as info:
        await call(failing(exc))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


@pytest.mark.asyncio
async def test_429_is_rate_limited() -> None:
    http, _ = replay(b"Too Many Requests", status=429, headers={"retry-after": "30"})
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("rate_limited", 503)
    assert info.value.details["retry_after"] == 30


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_are_provider_auth(status: int) -> None:
    """Even with a body saying "no results": only 400/404 may mean an empty answer."""
    http, _ = replay(EMPTY, status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status, info.value.details["upstream_status"]) == ("provider_auth", 503, status)


# --- input rules ---------------------------------------------------------------


def next_year() -> int:
    return _dt.datetime.now(_dt.UTC).year + 1


def test_check_accepts_next_year_and_refuses_the_one_after() -> None:
    check(value(model_year=next_year()))
    with pytest.raises(FieldError) as info:
        check(value(model_year=next_year() + 1))
    assert info.value.field == "model_year"


def test_check_refuses_a_make_that_is_short_once_trimmed() -> None:
    with pytest.raises(FieldError) as info:
        check(value(make=" a"))
    assert info.value.field == "make"


@pytest.mark.parametrize(
    "fields",
    [
        {"make": "Hon/da"},
        {"make": "H"},
        {"make": "  "},
        {"make": "Honda."},
        {"make": "x" * 41},
        {"model": "Accord!"},
        {"model": "Acc_ord"},
        {"model": ""},
        {"model": "..."},
        {"model": "x" * 61},
        {"model_year": 1949},
        {"model_year": "2021"},
        {"limit": 0},
        {"limit": 51},
        {"memo_typo": 1},
    ],
)
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


@pytest.mark.parametrize(
    "fields",
    [
        {"make": "Mercedes-Benz", "model": "C 300"},
        {"make": "BMW", "model": "3-SERIES"},
        {"model": "F-150"},
        {"model": "Model 3"},
        {"make": "Ram", "model": "1500"},
        {"model": "St. Regis"},
    ],
)
def test_msgspec_accepts_real_names(fields: dict[str, object]) -> None:
    assert value(**fields).limit == 25


def test_example_input_validates_and_passes_check() -> None:
    for example in VEHICLE_RECALLS.examples:
        check(msgspec.convert(dict(example.input), VehicleRecallsInput, strict=True))
    assert VEHICLE_RECALLS.quote(value()) == 5000  # 0.005 USDC


# --- snapshot of the answer shape ------------------------------------------------


@pytest.mark.asyncio
async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay(HONDA.read_bytes())
    answer = msgspec.to_builtins(await call(http))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    assert answer == snapshot


async def test_answer_maps_to_one_recordable_fact() -> None:
    from tollway_vehicles.tool import facts

    http, _ = replay(HONDA.read_bytes())
    answer = await call(http, value(make=" honda ", model="accord", limit=1))
    (fact,) = facts(value(make=" honda ", model="accord", limit=1), answer)
    assert fact.attribute == "vehicle_recalls" and fact.key == "HONDA|ACCORD|2021"
    assert fact.value == {"total": 4}
    assert fact.source == "NHTSA" and fact.as_of == "2024-02-01" and fact.public
