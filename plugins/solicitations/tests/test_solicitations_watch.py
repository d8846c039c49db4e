"""The `government_solicitations` watch source: registered by the plugin, it polls
SAM.gov once per watched notice (in the 364 days up to today) and observes each
notice exactly as the lookup records it as a fact; notices not found are absent from
a partial snapshot; failures of the whole source fail the poll. SAM.gov is replayed
(see `sam_replay`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eth_account import Account
from sam_replay import API_KEY, KEY_ENV, SamReplay, notice_answer, notice_query, recorded_item

from tollway import PluginContext, ToolError
from tollway.testing import credits_session, http_client, proof_headers, stored_facts
from tollway_solicitations.watch import SOLICITATIONS_WATCH, check_key

NAVY = "ff9642d70c15414a85940230450bda32"
AWARD = "f90fba9ebf6243ed8290c4ed4603c182"
GONE = "0123456789abcdef0123456789abcdef"  # not listed by the replay: SAM.gov's documented "No Data found"
NO_DATA = b'{"error":{"code":"404","message":"No Data found"}}'  # built from the documented message


def services(replay: SamReplay, tmp_path: Path, settings: dict[str, str] | None = None) -> PluginContext:
    values = {"sam_api_key": API_KEY} if settings is None else settings
    return PluginContext(
        home=tmp_path,
        offline=True,
        http=replay.client(),
        settings_of=lambda family: values if family == "solicitations" else {},
    )


def replay_of_three() -> SamReplay:
    return (
        SamReplay()
        .expect(notice_query(NAVY), notice_answer(recorded_item(NAVY)))
        .expect(notice_query(AWARD), notice_answer(recorded_item(AWARD)))
        .expect(notice_query(GONE), NO_DATA, status=404)
    )


async def test_the_plugin_registers_the_watch_source(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_solicitations"})
    source = kernel.watch_sources["government_solicitations"]
    assert source.entity_types == ("solicitation",) and source.source == "SAM.gov"
    assert source.check_key is not None and source.check_key(NAVY) is None


async def test_poll_observes_each_notice_as_the_lookup_records_it(kernel_factory) -> None:
    replay = replay_of_three()
    kernel = await kernel_factory(installed={"tollway_solicitations"}, transport=replay.transport, env=KEY_ENV)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for nid in (NAVY, AWARD):
            assert (
                await client.post("/v1/tools/lookup/government-solicitations", json={"notice_id": nid}, headers=auth)
            ).status_code == 200
    replay.seen.clear()
    snapshot = await kernel.watch_sources["government_solicitations"].poll(kernel.context, [AWARD, NAVY, GONE, NAVY])
    assert sorted(replay.queries(), key=lambda q: q["noticeid"]) == [
        notice_query(k) for k in sorted({NAVY, AWARD, GONE})
    ]
    assert snapshot.complete is False
    assert set(snapshot.values) == {NAVY, AWARD}  # the notice SAM.gov did not find is simply absent
    for nid in (NAVY, AWARD):
        (fact,) = await stored_facts("government_solicitations", nid)
        assert snapshot.values[nid].value == fact["value"]
        assert snapshot.values[nid].as_of == fact["as_of"] == "2026-02-02"
    assert snapshot.values[AWARD].value["award"]["awardee"]["uei_sam"] == "LPZ2UE7MLNL5"


async def test_no_watched_notice_asks_nothing(tmp_path) -> None:
    replay = SamReplay()
    snapshot = await SOLICITATIONS_WATCH.poll(services(replay, tmp_path, settings={}), [])
    assert snapshot.values == {} and replay.seen == []


async def test_keys_that_cannot_be_notice_ids_are_not_asked(tmp_path) -> None:
    replay = SamReplay().expect(notice_query(NAVY), notice_answer(recorded_item(NAVY)))
    snapshot = await SOLICITATIONS_WATCH.poll(services(replay, tmp_path), [NAVY, NAVY.upper(), "x' OR 1=1"])
    assert set(snapshot.values) == {NAVY} and len(replay.seen) == 1


async def test_no_api_key_fails_the_poll_naming_the_setting(tmp_path) -> None:
    replay = replay_of_three()
    with pytest.raises(ToolError) as info:
        await SOLICITATIONS_WATCH.poll(services(replay, tmp_path, settings={}), [NAVY])
    assert info.value.code == "provider_unavailable" and "TOLLWAY_SOLICITATIONS_SAM_API_KEY" in info.value.message
    assert replay.seen == []


async def test_one_failing_notice_is_left_out(tmp_path, logs) -> None:
    replay = SamReplay().expect(notice_query(NAVY), notice_answer(recorded_item(NAVY)))
    replay.expect(notice_query(AWARD), b"<html>Bad Gateway</html>", status=502)
    snapshot = await SOLICITATIONS_WATCH.poll(services(replay, tmp_path), [NAVY, AWARD])
    assert set(snapshot.values) == {NAVY} and snapshot.complete is False
    assert AWARD in logs.text and API_KEY not in logs.text


@pytest.mark.parametrize(("status", "code"), [(403, "provider_auth"), (429, "rate_limited")])
async def test_failures_of_the_whole_source_fail_the_poll(tmp_path, logs, status: int, code: str) -> None:
    replay = SamReplay().expect(notice_query(NAVY), b"{}", status=status)
    replay.expect(notice_query(AWARD), notice_answer(recorded_item(AWARD)))
    with pytest.raises(ToolError) as info:
        await SOLICITATIONS_WATCH.poll(services(replay, tmp_path), [NAVY, AWARD])
    assert info.value.code == code
    assert API_KEY not in logs.text and API_KEY not in info.value.message


async def test_every_notice_failing_fails_the_poll(tmp_path) -> None:
    replay = SamReplay()  # answers 599 to everything
    with pytest.raises(ToolError) as info:
        await SOLICITATIONS_WATCH.poll(services(replay, tmp_path), [NAVY, AWARD])
    assert info.value.code == "provider_unavailable" and len(replay.seen) == 2


@pytest.mark.parametrize(
    ("key", "ok"),
    [(NAVY, True), (NAVY.upper(), False), (NAVY[:-1], False), (NAVY + "0", False), ("", False), ("zz" * 16, False)],
)
def test_check_key(key: str, ok: bool) -> None:
    assert (check_key(key) is None) == ok


async def test_the_watch_resource_refuses_a_key_that_is_no_notice_id_in_a_readable_sentence(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_solicitations"})
    body = {
        "entity_type": "solicitation",
        "attribute": "government_solicitations",
        "key": "not-a-notice",
        "max_spend": 1,
    }
    raw = json.dumps(body).encode()
    async with http_client(kernel) as client:
        signed = proof_headers(Account.create(), scope="write", method="POST", path="/v1/tools/watch", body=raw)
        r = await client.post("/v1/tools/watch", content=raw, headers={"content-type": "application/json", **signed})
    reason = "must be a SAM.gov notice id (noticeId): 32 lower-case hexadecimal characters"
    assert (r.status_code, r.json()["error"]) == (400, "invalid_input"), r.text
    assert r.json()["message"] == "key " + reason + "."
    assert r.json()["details"] == [{"field": "key", "message": reason}]
