"""How a plugin tests itself with `tollway.testing` (the fixtures come with it)."""

from __future__ import annotations

import httpx

from tollway.testing import PluginContract, credits_session, http_client

from . import plugin as hooks


class TestAlmanacContract(PluginContract):
    plugin = "tollway_almanac"  # the entry-point name
    module = hooks  # not installed: register this hook module under that name


async def test_day_length_is_paid_from_credits(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("tollway_almanac", hooks)])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "0.01")
        answer = await client.post("/v1/tools/almanac/day-length", json={"latitude": 0}, headers=auth)
    assert answer.status_code == 200
    assert 11.9 < answer.json()["data"]["result"]["hours"] < 12.3  # the equator: about 12 hours


async def test_holidays_are_read_from_a_replayed_answer(kernel_factory) -> None:
    def nager(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v3/PublicHolidays/2026/FR"
        return httpx.Response(200, json=[{"date": "2026-07-14", "localName": "Fête nationale", "name": "Bastille Day"}])

    kernel = await kernel_factory(plugins=[("tollway_almanac", hooks)], transport=httpx.MockTransport(nager))
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "0.01")
        answer = await client.post("/v1/tools/almanac/holidays", json={"country": "FR", "year": 2026}, headers=auth)
    data = answer.json()["data"]
    assert data["result"] == [{"date": "2026-07-14", "name": "Bastille Day", "local_name": "Fête nationale"}]
    assert data["evidence"]["source"] == "Nager.Date"
