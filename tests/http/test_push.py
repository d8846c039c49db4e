"""The job push channel over a real WebSocket (uvicorn on 127.0.0.1, the
`websockets` client): snapshot at subscription, `processing`, then the terminal
message with the result; ownership; and, on PostgreSQL, a push crossing from the
process that ran the job to a subscriber connected to another API process."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets
from eth_account import Account

from tests.support.jobs_plugin import JobsPlugin
from tests.support.serving import serve_app
from tollway._runtime.service import http_app
from tollway._runtime.worker import Worker
from tollway.testing import credits_session, http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}


async def _agent(client):
    return (await credits_session(client))[1]


async def _receive(ws, timeout=10.0):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout=timeout))


async def test_subscriber_gets_snapshot_processing_and_result(kernel_factory, tmp_path):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    gate = tmp_path / "open"
    async with http_client(kernel) as client, serve_app(http_app(kernel, manage_kernel=False)) as url:
        auth = await _agent(client)
        accepted = (
            await client.post("/v1/tools/test/gate-job", json={"a": 4, "b": 5, "gate": str(gate)}, headers=auth)
        ).json()
        ws_url = url.replace("http://", "ws://") + "/v1/requests/subscribe"
        async with websockets.connect(ws_url, additional_headers=auth) as ws:
            await ws.send(json.dumps({"action": "subscribe", "request_ids": [accepted["request_id"], "req_not_mine"]}))
            snapshot = await _receive(ws)
            refused = await _receive(ws)
            worker = Worker(kernel, poll_s=0.05)
            worker.start()
            try:
                processing = await _receive(ws)
                gate.write_text("go")
                completed = await _receive(ws)
            finally:
                await worker.stop()
            polled = (await client.get(f"/v1/requests/{accepted['request_id']}", headers=auth)).json()
            # subscribing to a finished job answers at once with its snapshot
            await ws.send(json.dumps({"action": "subscribe", "request_ids": [accepted["request_id"]]}))
            late = await _receive(ws)
    assert snapshot["type"] == "job" and snapshot["snapshot"] is True and snapshot["status"] == "pending"
    assert refused["type"] == "error" and refused["error"] == "not_found" and refused["request_id"] == "req_not_mine"
    assert processing["status"] == "processing" and processing["snapshot"] is False
    assert completed["status"] == "completed" and completed["result"]["sum"] == 9
    assert {k: v for k, v in completed.items() if k not in ("type", "snapshot")} == polled
    assert late["snapshot"] is True and late["status"] == "completed"


async def test_subscription_needs_an_identity_and_hides_other_agents_jobs(kernel_factory):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    async with http_client(kernel) as client, serve_app(http_app(kernel, manage_kernel=False)) as url:
        auth = await _agent(client)
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()
        ws_url = url.replace("http://", "ws://") + "/v1/requests/subscribe"
        async with websockets.connect(ws_url) as anonymous:
            refused = await _receive(anonymous)
            await asyncio.wait_for(anonymous.wait_closed(), timeout=5)
        other = {"X-Agent-ID": Account.create().address}
        async with websockets.connect(ws_url + f"?request_id={accepted['request_id']}", additional_headers=other) as ws:
            hidden = await _receive(ws)
    assert refused["type"] == "error" and refused["error"] == "unauthorized"
    assert hidden["type"] == "error" and hidden["error"] == "not_found"


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_push_crosses_processes_on_postgres(kernel_factory, tmp_path):
    """Two kernels = two API processes (own pools, own LISTEN connections) on one
    database: the job is paid and run through B; the subscriber sits on A.
    (SQLite is one process: its in-process bus is covered above.)"""
    a = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    b = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    gate = tmp_path / "open"
    async with http_client(b) as client_b, serve_app(http_app(a, manage_kernel=False)) as url_a:
        auth = await _agent(client_b)
        accepted = (
            await client_b.post("/v1/tools/test/gate-job", json={"a": 1, "b": 2, "gate": str(gate)}, headers=auth)
        ).json()
        async with websockets.connect(
            url_a.replace("http://", "ws://") + "/v1/requests/subscribe", additional_headers=auth
        ) as ws:
            await ws.send(json.dumps({"action": "subscribe", "request_ids": [accepted["request_id"]]}))
            assert (await _receive(ws))["status"] == "pending"
            worker = Worker(b, poll_s=0.05)
            worker.start()
            try:
                assert (await _receive(ws))["status"] == "processing"
                gate.write_text("go")
                done = await _receive(ws)
            finally:
                await worker.stop()
    assert done["status"] == "completed" and done["result"]["sum"] == 3


async def test_one_connection_waits_on_more_jobs_than_the_cap_in_turn(kernel_factory):
    """The cap counts unfinished jobs watched at once: past it an unfinished job is
    refused (the error names the cap), a finished one still answers; jobs that
    finished leave the count, so every later subscription's result arrives."""
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())], env={"TOLLWAY_RATE_LIMIT_PAID": "1000/60"})
    async with http_client(kernel) as client, serve_app(http_app(kernel, manage_kernel=False)) as url:
        _, auth = await credits_session(client, "1")
        ids = []
        for i in range(130):
            accepted = await client.post("/v1/tools/test/add-numbers", json={"a": i, "b": 1}, headers=auth)
            assert accepted.status_code == 202, accepted.text
            ids.append(accepted.json()["request_id"])
        async with websockets.connect(
            url.replace("http://", "ws://") + "/v1/requests/subscribe", additional_headers=auth
        ) as ws:
            await ws.send(json.dumps({"action": "subscribe", "request_ids": ids[:101]}))
            snapshots = [await _receive(ws) for _ in range(101)]
            worker = Worker(kernel, poll_s=0.05)
            worker.start()
            try:
                results: dict[str, dict] = {}
                while len(results) < 100:
                    message = await _receive(ws, timeout=30)
                    if message["type"] == "job" and message["status"] == "completed":
                        results[message["request_id"]] = message
                # the first hundred finished: the rest fit, one message batch at a time
                for batch in (ids[100:115], ids[115:]):
                    await ws.send(json.dumps({"action": "subscribe", "request_ids": batch}))
                    pending = set(batch)
                    while pending:
                        message = await _receive(ws, timeout=30)
                        assert message["type"] == "job", message
                        if message["status"] == "completed":
                            results[message["request_id"]] = message
                            pending.discard(message["request_id"])
            finally:
                await worker.stop()
    assert [s["status"] for s in snapshots[:100]] == ["pending"] * 100
    refused = snapshots[100]
    assert refused["type"] == "error" and refused["error"] == "invalid_request" and refused["request_id"] == ids[100]
    assert "100" in refused["message"] and refused["limit"] == 100
    assert set(results) == set(ids)
    assert all(results[rid]["result"]["sum"] == i + 1 for i, rid in enumerate(ids))


async def test_push_channel_refuses_a_deep_message_and_keeps_the_connection(kernel_factory):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    async with http_client(kernel) as client, serve_app(http_app(kernel, manage_kernel=False)) as url:
        _, auth = await credits_session(client)
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()
        async with websockets.connect(
            url.replace("http://", "ws://") + "/v1/requests/subscribe", additional_headers=auth, max_size=None
        ) as ws:
            await ws.send('{"action": "subscribe", "request_ids": ' + "[" * 100_000 + "]" * 100_000 + "}")
            refused = await _receive(ws)
            await ws.send("not json")
            garbled = await _receive(ws)
            await ws.send(json.dumps({"action": "subscribe", "request_ids": [accepted["request_id"]]}))
            snapshot = await _receive(ws)
    assert refused["type"] == "error" and refused["error"] == "invalid_request" and "64" in refused["message"]
    assert garbled["type"] == "error" and garbled["error"] == "invalid_request"
    assert snapshot["type"] == "job" and snapshot["request_id"] == accepted["request_id"]


async def test_a_running_job_reports_its_step_on_the_job_and_the_push_channel_until_it_ends(kernel_factory, tmp_path):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    gate = tmp_path / "open"
    async with http_client(kernel) as client, serve_app(http_app(kernel, manage_kernel=False)) as url:
        auth = await _agent(client)
        body = {"a": 1, "b": 1, "gate": str(gate), "report": "waiting at the gate"}
        accepted = (await client.post("/v1/tools/test/gate-job", json=body, headers=auth)).json()
        job_url = f"/v1/requests/{accepted['request_id']}"
        assert "message" not in (await client.get(job_url, headers=auth)).json()  # pending: nothing reported yet
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            for _ in range(200):
                running = (await client.get(job_url, headers=auth)).json()
                if running.get("message"):
                    break
                await asyncio.sleep(0.02)
            ws_url = url.replace("http://", "ws://") + "/v1/requests/subscribe"
            async with websockets.connect(ws_url, additional_headers=auth) as ws:
                await ws.send(json.dumps({"action": "subscribe", "request_ids": [accepted["request_id"]]}))
                snapshot = await _receive(ws)
                gate.write_text("go")
                completed = await _receive(ws)
            polled = (await client.get(job_url, headers=auth)).json()
        finally:
            await worker.stop()
    assert (running["status"], running["message"]) == ("processing", "waiting at the gate")
    assert (snapshot["status"], snapshot["message"]) == ("processing", "waiting at the gate")
    # an ended job no longer shows the step it was on
    assert (completed["status"], completed.get("message"), completed["result"]["sum"]) == ("completed", None, 2)
    assert polled["status"] == "completed" and "message" not in polled
