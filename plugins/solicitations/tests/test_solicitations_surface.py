"""Snapshots of the solicitations tool's public surface (`tollway.testing.PluginSurface`):
its OpenAPI operation and schemas, its MCP listing, a paid search answer with its quote
and receipt, and the refusals of bad input and of a service without a SAM.gov key.
SAM.gov is replayed from its real recorded page (see fixtures/README.md)."""

from __future__ import annotations

import pytest
from sam_replay import KEY_ENV, RECORDED_QUERY, SamReplay

from tollway.testing import PluginSurface, http_client, normalise, paid_answer

PATH = "/v1/tools/lookup/government-solicitations"


class TestSolicitationsSurface(PluginSurface):
    plugin = "tollway_solicitations"
    env = KEY_ENV


@pytest.fixture
def replay() -> SamReplay:
    return SamReplay().recorded()


async def test_paid_search_answer_and_receipt(kernel_factory, replay, snapshot) -> None:
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    body = {"posted_from": "2026-01-01", "posted_to": "2026-02-02", "memo": "bid pipeline"}
    answer = await paid_answer(kernel, PATH, body)
    assert replay.queries() == [RECORDED_QUERY]  # asked once, for the paid call
    assert answer["quote"] == snapshot(name="quote")
    assert answer["answer"] == snapshot(name="answer")
    assert answer["receipt"] == snapshot(name="receipt")


async def test_error_bodies(kernel_factory, replay, snapshot) -> None:
    configured = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    async with http_client(configured) as client:
        answers = {
            "id_and_search": await client.post(
                PATH, json={"notice_id": "ff9642d70c15414a85940230450bda32", "keywords": "valve"}
            ),
            "bad_window": await client.post(PATH, json={"posted_from": "2025-01-01", "posted_to": "2026-01-01"}),
            "several_fields": await client.post(
                PATH, json={"notice_id": "nope", "naics": "1", "limit": 30, "colour": "red"}
            ),
        }
    bare = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport)
    async with http_client(bare) as client:
        answers["no_api_key"] = await client.post(PATH, json={"keywords": "valve"})
    assert replay.seen == []  # refused before anything was asked of SAM.gov
    assert {name: {"status": r.status_code, "body": normalise(r.json())} for name, r in answers.items()} == snapshot
