"""A `tollway serve` killed with SIGKILL leaves nothing behind: the process-pool
children of its cpu-bound jobs die with it and never held its listening socket, so
a new server binds the same port at once. A job worker killed while its pool
computes a job takes the computation down with it."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx
import pytest

from tests.runtime.test_worker_crash import start_worker, wait_until
from tests.support.jobs_plugin import JobsPlugin
from tests.support.serve_child import ServeProcess, free_port, serve_env
from tollway.testing import credits_session, http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}
ALLOCATION = {  # solve's own example: two orders to the cheaper warehouses
    "problem": "allocation",
    "allocation": {
        "objective": "minimise_cost",
        "items": [{"id": "order-1", "quantity": 30}, {"id": "order-2", "quantity": 20}],
        "options": [{"id": "north", "capacity": 40}, {"id": "south", "capacity": 40}],
        "pairs": [
            {"item": "order-1", "option": "north", "cost": 2},
            {"item": "order-1", "option": "south", "cost": 3},
            {"item": "order-2", "option": "north", "cost": 4},
            {"item": "order-2", "option": "south", "cost": 1},
        ],
    },
}


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) from /proc, or None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            parents[int(entry)] = stat[1]
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")  # a zombie has exited, its parent just has not reaped it


async def funded_token(client: httpx.AsyncClient) -> dict[str, str]:
    """The bearer header of a new agent granted 5 USDC of credits by the operator."""
    agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
    granted = await client.post(
        "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "5"}, headers=OPERATOR
    )
    assert granted.status_code == 200, granted.text
    token = (
        await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR)
    ).json()["token"]
    return {"Authorization": f"Bearer {token}"}


async def paid_cpu_job(client: httpx.AsyncClient, auth: dict[str, str]) -> None:
    """A solve job paid with `auth`'s credits, polled until it ends; it must complete."""
    accepted = await client.post(
        "/v1/tools/solve", json=ALLOCATION, headers={**auth, "Idempotency-Key": "pool-children"}
    )
    assert accepted.status_code == 202, accepted.text
    request_id = accepted.json()["request_id"]
    for _ in range(300):  # once a second (reads are limited to 120 a minute), 5 minutes at most on a busy machine
        polled = await client.get(f"/v1/requests/{request_id}", headers=auth)
        assert polled.status_code == 200, polled.text
        job = polled.json()
        if job["status"] in ("completed", "failed"):
            break
        await asyncio.sleep(1.0)
    assert job["status"] == "completed", job


async def test_pool_children_die_with_a_killed_server_and_the_port_is_free(tmp_path):
    env, port = serve_env(tmp_path), free_port()
    first = ServeProcess(env, port, tmp_path / "first.log")
    children: set[int] = set()
    try:
        await first.start()
        async with httpx.AsyncClient(base_url=first.url, timeout=30.0) as client:
            await paid_cpu_job(client, await funded_token(client))
        children = descendants(first.pid)
        assert children, "the cpu-bound job ran in no child process"
        os.kill(first.pid, signal.SIGKILL)
        assert first.proc is not None
        await first.proc.wait()
        for _ in range(100):  # 10 s
            if not any(alive(pid) for pid in children):
                break
            await asyncio.sleep(0.1)
        left = sorted(pid for pid in children if alive(pid))
        assert not left, f"pool children outlived the killed server: {left}"
        second = ServeProcess(env, port, tmp_path / "second.log")
        try:
            await second.start(timeout=60)  # binds the same port
            async with httpx.AsyncClient(base_url=second.url, timeout=10.0) as client:
                assert (await client.get("/healthz")).status_code == 200
        finally:
            await second.stop()
    finally:
        await first.stop()
        for pid in children:  # never leak processes, whatever failed above
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_a_killed_workers_pool_stops_computing_its_abandoned_job(kernel_factory):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        # a minute or more of pure Python in the pool: it is still computing when the worker dies
        accepted = (await client.post("/v1/tools/test/cpu-sum", json={"a": 2_000_000_000}, headers=auth)).json()
        worker = await start_worker(kernel, lease_s=30.0)
        children: set[int] = set()
        try:

            async def processing():
                return (await client.get(f"/v1/requests/{accepted['request_id']}", headers=auth)).json()[
                    "status"
                ] == "processing"

            await wait_until(processing)
            await asyncio.sleep(0.5)
            children = descendants(worker.pid)
            assert children, "the job ran in no child process"
            worker.send_signal(signal.SIGKILL)
            # not worker.wait(): asyncio also waits for its stdout pipe, which a leftover child would hold open
            for _ in range(100):
                if not any(alive(pid) for pid in children):
                    break
                await asyncio.sleep(0.1)
            left = sorted(pid for pid in children if alive(pid))
        finally:
            for pid in children:  # never leak processes, whatever failed above
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            if alive(worker.pid):
                worker.kill()
            await asyncio.wait_for(worker.wait(), timeout=30)
    assert not left, f"pool children outlived the killed worker: {left}"
