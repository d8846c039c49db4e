"""`government_solicitations` through the service (HTTP front, SQLite and PostgreSQL):
bad input and a missing API key are refused before any quote; a paid lookup records
its facts (one per notice, one for the search) with its receipt; a failed one is not
charged and records nothing; the API key shows nowhere it should not.
SAM.gov is replayed (see `sam_replay`)."""

from __future__ import annotations

import json

import pytest
from sam_replay import (
    API_KEY,
    KEY_ENV,
    RECORDED_QUERY,
    SamReplay,
    hear_everything,
    notice_answer,
    notice_query,
    recorded_item,
)

from tollway import search_key
from tollway.testing import count_quotes, count_receipts, credits_session, http_client, stored_facts
from tollway_solicitations.tool import SolicitationsInput

PATH = "/v1/tools/lookup/government-solicitations"
SEARCH = {"posted_from": "2026-01-01", "posted_to": "2026-02-02"}
NAVY = "ff9642d70c15414a85940230450bda32"


@pytest.mark.parametrize(
    ("body", "fields"),
    [({"notice_id": NAVY, "keywords": "valve", "naics": "33"}, {"keywords", "naics"}),
     ({"notice_id": "not-an-id", "limit": 0, "naics": "x"}, {"notice_id", "limit", "naics"}),
     ({"posted_from": "2026-02-02", "posted_to": "2026-01-01"}, {"posted_to"}),
     ({"posted_from": "2099-01-01", "posted_to": "2099-01-02", "keywords": "!!"}, {"posted_from", "posted_to", "keywords"}),
     ({"posted_from": "2024-06-01", "posted_to": "2025-06-01"}, {"posted_to"}),
     ({"notice_type": "Tender", "posted_to": "1/2/2026"}, {"notice_type", "posted_to"}),
     ({"keywords": "x", "colour": "red"}, {"keywords", "colour"})],
)  # fmt: skip
async def test_bad_input_is_400_naming_every_field_before_payment(kernel_factory, body, fields) -> None:
    replay = SamReplay()
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json=body)
    assert resp.status_code == 400, resp.text
    payload = resp.json()
    assert payload["error"] == "invalid_request"
    assert {d["field"] for d in payload["details"]} == fields
    assert "PAYMENT-REQUIRED" not in resp.headers
    assert await count_quotes(kernel) == 0 and replay.seen == []


async def test_no_api_key_is_503_before_payment(kernel_factory) -> None:
    replay = SamReplay().recorded()
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for headers in ({}, auth):  # neither a quote nor a credits charge
            resp = await client.post(PATH, json=SEARCH, headers=headers)
            assert resp.status_code == 503, resp.text
            body = resp.json()
            assert body["error"] == "provider_unavailable"
            assert "TOLLWAY_SOLICITATIONS_SAM_API_KEY" in body["message"]
            assert body["details"]["settings"] == ["TOLLWAY_SOLICITATIONS_SAM_API_KEY"]
            assert "PAYMENT-REQUIRED" not in resp.headers
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0 and replay.seen == []
    assert balance["credits_balance"] == "1.000000"  # nothing taken


async def test_paid_search_records_its_facts(kernel_factory, logs) -> None:
    replay = SamReplay().recorded()
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    async with http_client(kernel) as client:
        hear_everything(logs)
        agent, auth = await credits_session(client)
        resp = await client.post(PATH, json={**SEARCH, "memo": "bid pipeline"}, headers=auth)
        assert resp.status_code == 200, resp.text
        data = resp.json()["data"]
        receipt = await client.get(f"/v1/receipts/{data['receipt_id']}", headers=auth)
    assert replay.queries() == [RECORDED_QUERY]
    assert data["tool"] == "government_solicitations" and data["result"]["total"] == 9334
    notices = data["result"]["solicitations"]
    for notice in notices:
        (row,) = await stored_facts("government_solicitations", notice["notice_id"])
        assert (
            row["value"] == notice and row["source"] == "SAM.gov" and row["owner"] == "" and row["recorded_by"] == agent
        )
        assert row["as_of"] == "2026-02-02"
    key = search_key(SolicitationsInput(posted_from=_date("2026-01-01"), posted_to=_date("2026-02-02")))
    (search,) = await stored_facts("government_solicitations", key)
    assert search["value"] == {"total": 9334, "notice_ids": [n["notice_id"] for n in notices]}
    everything = json.dumps(await stored_facts("government_solicitations"))
    assert "2026-01-01" not in everything  # the search's input is not stored, only its hash
    assert API_KEY not in everything and API_KEY not in resp.text and API_KEY not in receipt.text
    assert "api_key=[redacted]" in logs.text and API_KEY not in logs.text  # the request's log line, scrubbed


async def test_a_failed_lookup_is_not_charged_and_records_nothing(kernel_factory, logs) -> None:
    replay = SamReplay().expect(
        notice_query(NAVY),
        b'{"error":{"code":"API_KEY_INVALID","message":"An invalid api_key was supplied."}}',
        status=403,
    )
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    async with http_client(kernel) as client:
        hear_everything(logs)
        _, auth = await credits_session(client)
        resp = await client.post(PATH, json={"notice_id": NAVY}, headers=auth)
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert resp.status_code == 503, resp.text
    assert resp.json()["error"] == "provider_auth"
    assert API_KEY not in resp.text and "api_key=[redacted]" in logs.text and API_KEY not in logs.text
    assert await stored_facts("government_solicitations") == []
    assert balance["credits_balance"] == "1.000000"  # taken, then given back


async def test_a_lookup_by_id_records_the_notice_once_until_it_changes(kernel_factory) -> None:
    item = recorded_item(NAVY)
    replay = SamReplay().expect(notice_query(NAVY), notice_answer(item))
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for _ in range(2):
            assert (await client.post(PATH, json={"notice_id": NAVY}, headers=auth)).status_code == 200
        replay.routes.clear()
        replay.expect(
            notice_query(NAVY), notice_answer({**item, "responseDeadLine": "2026-03-09T16:00:00-05:00"})
        )  # built: an extended deadline
        assert (await client.post(PATH, json={"notice_id": NAVY}, headers=auth)).status_code == 200
    rows = await stored_facts("government_solicitations", NAVY)
    assert [r["value"]["response_deadline"] for r in rows] == ["2026-03-02T16:00:00-05:00", "2026-03-09T16:00:00-05:00"]
    assert len(await stored_facts("government_solicitations")) == 2  # no search fact for a lookup by id


def _date(text: str):
    import datetime as dt

    return dt.date.fromisoformat(text)
