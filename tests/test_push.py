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

from core.testing import http_client
from http_server import create_app
from runtime.worker import Worker
from tests.support.jobs_plugin import JobsPlugin
from tests.support.serving import serve_app
from tests.support.accounts import credits_session

OPERATOR = {"Authorization": "Bearer test-operator-token"}


async def _agent(client):
    return (await credits_session(client))[1]

async def _receive(ws, timeout=10.0):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout=timeout))


async def test_subscriber_gets_snapshot_processing_and_result(kernel_factory, tmp_path):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    gate = tmp_path / "open"
    async with http_client(kernel) as client, serve_app(create_app(kernel, manage_kernel=False)) as url:
        auth = await _agent(client)
        accepted = (await client.post("/v1/tools/test/gate-job", json={"a": 4, "b": 5, "gate": str(gate)}, headers=auth)).json()
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
    async with http_client(kernel) as client, serve_app(create_app(kernel, manage_kernel=False)) as url:
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
    async with http_client(b) as client_b, serve_app(create_app(a, manage_kernel=False)) as url_a:
        auth = await _agent(client_b)
        accepted = (await client_b.post("/v1/tools/test/gate-job", json={"a": 1, "b": 2, "gate": str(gate)}, headers=auth)).json()
        async with websockets.connect(url_a.replace("http://", "ws://") + "/v1/requests/subscribe", additional_headers=auth) as ws:
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
