"""Fault test on PostgreSQL: a worker process holding a job is killed with
SIGKILL; the job completes on another worker process once its lease runs out,
charged once, with one receipt."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.support.jobs_plugin import JobsPlugin
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.jobs.tables import Job
from tollway._core.receipts.tables import Receipt
from tollway.testing import http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}
REPO = Path(__file__).resolve().parents[2]


async def start_worker(kernel, lease_s: float) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "TOLLWAY_HOME": str(kernel.config.plugin_env.get("TOLLWAY_HOME", "")),
        "TOLLWAY_DATABASE_URL": kernel.db.url,
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_RECEIPT_KEY": kernel.config.plugin_env["TOLLWAY_RECEIPT_KEY"],
        "TEST_WORKER_LEASE_S": str(lease_s),
        "PYTHONPATH": str(REPO),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.worker_process", env=env, cwd=str(REPO), stdout=asyncio.subprocess.PIPE
    )
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    assert line.strip() == b"ready"
    return proc


async def wait_until(predicate, timeout=30.0):
    for _ in range(int(timeout / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_killed_worker_job_completes_elsewhere_charged_once(kernel_factory, tmp_path):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin())])
    gate, marker = tmp_path / "gate", tmp_path / "started"
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1"}, headers=OPERATOR
        )
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        accepted = (
            await client.post(
                "/v1/tools/test/gate-job",
                json={"a": 20, "b": 22, "gate": str(gate), "marker": str(marker)},
                headers=auth,
            )
        ).json()

        first = await start_worker(kernel, lease_s=1.0)
        second = None
        try:
            await wait_until(lambda: asyncio.sleep(0, marker.exists() and str(first.pid) in marker.read_text()))
            first.send_signal(signal.SIGKILL)
            await first.wait()
            second = await start_worker(kernel, lease_s=1.0)
            # the job is re-run by the second worker once the dead worker's lease expires
            await wait_until(lambda: asyncio.sleep(0, str(second.pid) in marker.read_text()))
            gate.write_text("open")

            async def finished():
                return (await client.get(f"/v1/requests/{accepted['request_id']}", headers=auth)).json()[
                    "status"
                ] == "completed"

            await wait_until(finished)
            done = (await client.get(f"/v1/requests/{accepted['request_id']}", headers=auth)).json()
            balance = (await client.get("/v1/balance", headers=auth)).json()
        finally:
            for proc in (first, second):
                if proc is not None and proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    assert done["result"] == {"sum": 42, "pid": second.pid}
    row = await Job.select().where(Job.id == accepted["request_id"]).first()
    assert row["attempt"] == 2
    assert balance["credits_balance"] == "0.998000"
    assert await LedgerEntry.count().where(LedgerEntry.kind == "spend") == 1
    assert await Receipt.count() == 1
    assert [r["revision"] for r in await kernel.receipts.revisions(accepted["receipt_id"])] == [1, 2]
    assert await check_ledger(max_intermediate_age_s=0) == []
