"""Refusals of `vehicle_recalls` name every wrong field, on the HTTP route and on
the MCP tool alike, before any quote or payment (no upstream is ever reached)."""

from __future__ import annotations

import datetime as _dt

import pytest
from mcp import Client

from tollway.testing import count_quotes, count_receipts, http_client, mcp_server_for

PATH = "/v1/tools/lookup/vehicle-recalls"
# make too short, model empty, model_year too old, limit below 1: four wrong fields
FOUR_WRONG = {"make": "H", "model": "", "model_year": 1900, "limit": 0}
FOUR_DETAILS = [
    {"field": "make", "message": "make must be 2 to 40 characters"},
    {"field": "model", "message": "model must be 1 to 60 characters"},
    {"field": "model_year", "message": "model_year must be at least 1950"},
    {"field": "limit", "message": "limit must be from 1 to 50"},
]
FOUR_MESSAGE = "4 fields are invalid: make, model, model_year, limit."


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(installed={"tollway_vehicles"})


async def test_http_names_all_four_wrong_fields(kernel) -> None:
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json=FOUR_WRONG)
    assert resp.status_code == 400
    body = resp.json()
    assert body == {"error": "invalid_request", "message": FOUR_MESSAGE, "details": FOUR_DETAILS}
    assert "PAYMENT-REQUIRED" not in resp.headers
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


async def test_mcp_names_all_four_wrong_fields(kernel) -> None:
    async with Client(mcp_server_for(kernel)) as client:
        result = await client.call_tool("vehicle_recalls", FOUR_WRONG)
    assert result.is_error
    assert result.structured_content == {"error": "invalid_request", "message": FOUR_MESSAGE, "details": FOUR_DETAILS}
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


async def test_wrong_types_unknown_and_missing_fields_are_each_an_entry(kernel) -> None:
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"make": 7, "model_year": "2021", "limit": True, "colour": "red"})
    assert resp.status_code == 400
    assert resp.json()["details"] == [
        {"field": "make", "message": "make must be a string of 2 to 40 characters"},
        {"field": "model_year", "message": "model_year must be a whole number of at least 1950"},
        {"field": "limit", "message": "limit must be a whole number from 1 to 50"},
        {"field": "colour", "message": "colour is not an accepted field"},
        {"field": "model", "message": "model is required (a string of 1 to 60 characters)"},
    ]


async def test_a_pattern_is_explained_by_the_field_description_not_shown(kernel) -> None:
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"make": "Hon/da", "model": "Accord", "model_year": 2021})
    (detail,) = resp.json()["details"]
    assert detail["field"] == "make"
    assert (
        detail["message"]
        == "make is not in the accepted form (Vehicle make, e.g. Honda: 2 to 40 letters, digits, spaces or hyphens)"
    )
    assert "^" not in detail["message"] and "`" not in detail["message"]


async def test_the_check_names_both_fields_it_refuses(kernel) -> None:
    too_new = _dt.datetime.now(_dt.UTC).year + 2
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"make": " a ", "model": "Accord", "model_year": too_new})
    assert resp.status_code == 400
    body = resp.json()
    assert body["error"] == "invalid_request"
    assert [d["field"] for d in body["details"]] == ["make", "model_year"]
    assert body["message"] == "2 fields are invalid: make, model_year."
