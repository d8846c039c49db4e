"""Snapshots of the kernel's public surfaces, with the kernel's test plugins: the
OpenAPI document, a paid answer of a tool that calls an upstream (its quote and
receipt too), and the error bodies. Volatile values (ids, times, hashes,
signatures, addresses) are normalised first so the snapshots hold the shapes.
Each tool plugin snapshots its own tools in its own tests (`tollway.testing.PluginSurface`)."""

from __future__ import annotations

import pytest
from eth_account import Account

from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tests.support.lookup_plugin import LookupPlugin, word_list_transport
from tollway.testing import http_client, normalise, paid_answer

LOOKUP = "/v1/tools/test/lookup"


@pytest.fixture
def upstream():
    return word_list_transport()


@pytest.fixture
async def kernel(kernel_factory, upstream):
    plugins = [("echo", EchoPlugin()), ("jobs", JobsPlugin()), ("lookup", LookupPlugin())]
    return await kernel_factory(plugins=plugins, transport=upstream)


async def test_openapi_document(kernel, snapshot):
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    assert normalise(doc) == snapshot


async def test_paid_lookup_answer_and_receipt(kernel, upstream, snapshot):
    answer = await paid_answer(kernel, LOOKUP, {"word": "ship", "limit": 1, "memo": "fleet check"})
    assert len(upstream.served) == 1 and not upstream.unexpected  # asked once, for the paid call
    assert answer["quote"] == snapshot(name="quote")
    assert answer["answer"] == snapshot(name="answer")
    assert answer["receipt"] == snapshot(name="receipt")


async def test_error_bodies(kernel, upstream, snapshot):
    async with http_client(kernel) as client:
        answers = {
            "bad_word": await client.post(LOOKUP, json={"word": "sh1p"}),
            "missing_word": await client.post(LOOKUP, json={"limit": 2}),
            "several_fields": await client.post(LOOKUP, json={"word": "", "limit": 0, "colour": "red"}),
            "not_json": await client.post(LOOKUP, content=b"{nope", headers={"content-type": "application/json"}),
            "top_up_amount": await client.post(
                "/v1/credits/top-up", json={"amount": 5000}, headers={"X-Agent-ID": Account.create().address}
            ),
            "unknown_route": await client.get("/v1/nothing-here"),
            "operator": await client.post(
                "/v1/tools/internal/credits/grant", json={}, headers={"Authorization": "Bearer wrong"}
            ),
        }
    shaped = {name: {"status": r.status_code, "body": normalise(r.json())} for name, r in answers.items()}
    shaped["not_json"]["body"]["details"] = [
        {"field": d["field"], "message": "<decoder message>"} for d in shaped["not_json"]["body"]["details"]
    ]
    assert upstream.served == []  # every refusal came before the upstream was asked
    assert shaped == snapshot
