"""Tests for `vehicle_identification` (VIN decoding with NHTSA vPIC).

No recorded vPIC answer could be found, so the replayed answer is a
hand-built fixture following vPIC's documented DecodeVinValues format
(`fixtures/vpic_DecodeVinValues_1HGCM82633A004352.json`, see `fixtures/README.md`).
It is served through an `httpx.MockTransport` that asserts the exact URL; no test
reaches the internet.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_vehicles import vin
from tollway_vehicles.tool_vin import (
    VEHICLE_IDENTIFICATION,
    IdentificationAnswer,
    VehicleIdentificationInput,
    check,
    facts,
)

FIXTURE = Path(__file__).parent / "fixtures" / "vpic_DecodeVinValues_1HGCM82633A004352.json"
REAL_VIN = "1HGCM82633A004352"  # a real, valid VIN (2003 Honda Accord): check digit 3
URL = "https://vpic.nhtsa.dot.gov/api/vehicles/DecodeVinValues/1HGCM82633A004352"


def replay(body: bytes, *, status: int = 200, expect_url: str = URL, headers: dict[str, str] | None = None):
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == expect_url
        assert dict(request.url.params) == {"format": "json"}
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def value(text: str = REAL_VIN) -> VehicleIdentificationInput:
    return msgspec.convert({"vin": text}, VehicleIdentificationInput, strict=True)


async def call(
    http: httpx.AsyncClient, v: VehicleIdentificationInput | None = None, **settings: str
) -> IdentificationAnswer:
    async with http:
        ctx = ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
        return await VEHICLE_IDENTIFICATION.run(v or value(), ctx)


# --- the VIN rules, before payment -------------------------------------------------


def test_real_vin_is_valid_and_check_digit_computes() -> None:
    assert vin.validate_vin(REAL_VIN) is None
    assert vin.check_digit(REAL_VIN) == "3"
    assert vin.validate_vin("1M8GDM9AXKP042788") is None  # check digit X (remainder 10)
    check(value(" 1hgcm82633a004352 "))  # any case, surrounding spaces ignored


def test_corrupted_vin_fails_the_check_digit() -> None:
    corrupted = REAL_VIN[:12] + "5" + REAL_VIN[13:]  # one serial digit changed: 1HGCM82633A005352
    with pytest.raises(FieldError) as info:
        check(value(corrupted))
    assert info.value.field == "vin"
    assert "Check digit" in info.value.message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1HGCM82633A00435", "exactly 17"),
        ("1HGCM82633A0043521", "exactly 17"),
        ("1HGCM82633A0O4352", "I, O or Q"),
        ("IHGCM82633A004352", "I, O or Q"),
        ("1HGCM8263-A004352", "only the digits"),
    ],
)
def test_bad_vins_are_refused_with_a_reason(text: str, words: str) -> None:
    with pytest.raises(FieldError) as info:
        check(value(text))
    assert words in info.value.message


async def test_bad_vin_is_400_with_details_before_payment(kernel_factory) -> None:
    from tollway.testing import count_quotes, count_receipts, http_client

    kernel = await kernel_factory(installed={"tollway_vehicles"})
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/vehicle-identification", json={"vin": "1HGCM82633A005352"})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["error"] == "invalid_request"
    assert body["details"][0]["field"] == "vin"
    assert "PAYMENT-REQUIRED" not in resp.headers
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


# --- decoding -----------------------------------------------------------------------


async def test_decodes_the_documented_answer() -> None:
    http, seen = replay(FIXTURE.read_bytes())
    answer = await call(http, value(" 1hgcm82633a004352"))
    assert len(seen) == 1
    r = answer.result
    assert r.vin == REAL_VIN
    assert (r.make, r.model, r.model_year, r.manufacturer) == (
        "HONDA",
        "Accord",
        2003,
        "AMERICAN HONDA MOTOR CO., INC.",
    )
    assert (r.body_class, r.vehicle_type, r.plant_country) == ("Coupe", "PASSENGER CAR", "UNITED STATES (USA)")
    assert (r.doors, r.engine_cylinders, r.displacement_l) == (2, 6, "3.0")
    assert (r.series, r.drive_type, r.gvwr) == (None, None, None)  # vPIC's "" values
    assert (r.decoded_clean, r.decode_notes) == (True, None)
    assert (answer.evidence.source, answer.evidence.source_kind, answer.evidence.as_of) == ("NHTSA", "public", None)


async def test_partial_decode_keeps_vpic_notes() -> None:
    doc = json.loads(FIXTURE.read_text())
    row = doc["Results"][0]
    row.update(
        ErrorCode="8",
        ErrorText="8 - No detailed data available currently",
        Make="",
        Model="",
        ModelYear="",
        BodyClass="Not Applicable",
    )
    http, _ = replay(json.dumps(doc).encode())
    r = (await call(http)).result
    assert (r.make, r.model, r.model_year, r.body_class) == (None, None, None, None)
    assert (r.decoded_clean, r.decode_notes) == (False, "8 - No detailed data available currently")


async def test_vpic_url_setting_points_at_a_mirror() -> None:
    http, seen = replay(FIXTURE.read_bytes(), expect_url="http://mirror.test/vpic/vehicles/DecodeVinValues/" + REAL_VIN)
    await call(http, vpic_api_url="http://mirror.test/vpic/")
    assert len(seen) == 1


async def test_vpic_url_from_the_environment_through_the_kernel(kernel_factory) -> None:
    kernel = await kernel_factory(
        installed={"tollway_vehicles"}, env={"TOLLWAY_VEHICLES_VPIC_API_URL": "http://env.test/api"}
    )
    http, seen = replay(FIXTURE.read_bytes(), expect_url="http://env.test/api/vehicles/DecodeVinValues/" + REAL_VIN)
    await call(http, **kernel.family_settings("vehicles"))
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, b"{}"),
        (503, b""),
        (404, b"<html/>"),
        (400, b"{}"),
        (200, b"<html>down</html>"),
        (200, b'{"Count":0,"Results":[]}'),
        (200, b"[]"),
    ],
)
async def test_upstream_failures_are_provider_unavailable(status: int, body: bytes) -> None:
    http, _ = replay(body, status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


async def test_connection_error_is_provider_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ToolError) as info:
        await call(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    assert info.value.code == "provider_unavailable"


async def test_429_is_rate_limited() -> None:
    http, _ = replay(b"slow down", status=429, headers={"retry-after": "5"})
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status, info.value.details["retry_after"]) == ("rate_limited", 503, 5)


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_are_provider_auth(status: int) -> None:
    http, _ = replay(b"{}", status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status, info.value.details["upstream_status"]) == ("provider_auth", 503, status)


async def test_answer_maps_to_a_fact_keyed_by_the_vin_in_capitals() -> None:
    http, _ = replay(FIXTURE.read_bytes())
    v = value("1hgcm82633a004352")
    (fact,) = facts(v, await call(http, v))
    assert (fact.attribute, fact.key, fact.source, fact.as_of) == ("vehicle_identification", REAL_VIN, "NHTSA", None)
    assert fact.value["make"] == "HONDA" and fact.value["model_year"] == 2003 and "vin" not in fact.value
    assert VEHICLE_IDENTIFICATION.quote(v) == 5000


async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay(FIXTURE.read_bytes())
    answer = msgspec.to_builtins(await call(http))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    assert answer == snapshot
