"""Snapshots of the vehicle tools' public surface (`tollway.testing.PluginSurface`): their
OpenAPI operations and schemas, their MCP listing, a paid recall answer with its quote
and receipt, and the refusals of bad input. NHTSA is replayed from the recorded Honda
Accord 2021 answer in fixtures/nhtsa_recalls/ (see fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tollway.testing import PluginSurface, http_client, normalise, paid_answer
from tollway_vehicles import nhtsa

HONDA = (
    Path(__file__).resolve().parent / "fixtures" / "nhtsa_recalls" / "recallsByVehicle_honda_accord_2021_trimmed.json"
)
RECALLS = "/v1/tools/lookup/vehicle-recalls"


def nhtsa_replay(served: list[httpx.Request]) -> httpx.MockTransport:
    """NHTSA's recorded answer for exactly the request it was recorded for; anything else is a 599."""

    def handler(request: httpx.Request) -> httpx.Response:
        served.append(request)
        ok = str(request.url.copy_with(query=None)) == "https://api.nhtsa.gov/recalls/recallsByVehicle"
        ok = ok and dict(request.url.params) == {"make": "honda", "model": "accord", "modelYear": "2021"}
        if not ok:
            return httpx.Response(599, text=f"no recording for {request.url}")
        return httpx.Response(200, content=HONDA.read_bytes(), headers={"content-type": "application/json"})

    return httpx.MockTransport(handler)


class TestVehiclesSurface(PluginSurface):
    plugin = "tollway_vehicles"


@pytest.fixture
def served() -> list[httpx.Request]:
    """The requests the NHTSA replay was asked."""
    return []


@pytest.fixture
async def kernel(kernel_factory, served, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(nhtsa.NHTSA.base_url_setting.env_var, raising=False)  # the real NHTSA URL, served by the replay
    return await kernel_factory(installed={"tollway_vehicles"}, transport=nhtsa_replay(served))


async def test_paid_recall_answer_and_receipt(kernel, served, snapshot):
    body = {"make": "Honda", "model": "Accord", "model_year": 2021, "limit": 1, "memo": "fleet check"}
    answer = await paid_answer(kernel, RECALLS, body)
    assert len(served) == 1  # asked once, for the paid call
    assert answer["quote"] == snapshot(name="quote")
    assert answer["answer"] == snapshot(name="answer")
    assert answer["receipt"] == snapshot(name="receipt")


async def test_error_bodies(kernel, served, snapshot):
    async with http_client(kernel) as client:
        answers = {
            "bad_year": await client.post(RECALLS, json={"make": "Honda", "model": "Accord", "model_year": 1900}),
            "missing_make": await client.post(RECALLS, json={"model": "Accord", "model_year": 2020}),
            "several_fields": await client.post(
                RECALLS, json={"make": "H", "model": "", "model_year": "2021", "limit": 0, "colour": "red"}
            ),
            "not_json": await client.post(RECALLS, content=b"{nope", headers={"content-type": "application/json"}),
        }
    shaped = {name: {"status": r.status_code, "body": normalise(r.json())} for name, r in answers.items()}
    shaped["not_json"]["body"]["details"] = [
        {"field": d["field"], "message": "<decoder message>"} for d in shaped["not_json"]["body"]["details"]
    ]
    assert served == []  # refused before anything was asked of NHTSA
    assert shaped == snapshot
