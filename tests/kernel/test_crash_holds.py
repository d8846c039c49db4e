"""Fault tests: an API process killed with SIGKILL while an inline credits call runs, on
SQLite and PostgreSQL. A tool that takes its credits before the run (a hold): the next
start of the service (its reconciler) refunds the hold with a receipt. A tool charged in
the commit after its run: nothing was charged, nothing is left to end."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import httpx

from tests.support.jobs_plugin import CrashPlugin, JobsPlugin
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import CreditHold, LedgerEntry
from tollway._core.receipts.tables import Receipt
from tollway.testing import OPERATOR, credits_session, http_client

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start_api(kernel, port: int, **env: str) -> asyncio.subprocess.Process:
    full = {
        **os.environ,
        "TOLLWAY_HOME": kernel.config.home,
        "TOLLWAY_DATABASE_URL": kernel.db.url,
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_RECEIPT_KEY": kernel.config.plugin_env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
        **env,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.api_process",
        str(port),
        env=full,
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
    )
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    assert line.strip() == b"ready"
    return proc


async def wait_until(predicate, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def kill_during_call(kernel, path: str, body: dict, auth: dict) -> None:
    """Start an API process, send it the call, SIGKILL it once the tool has started (its
    marker file exists), and check the caller got no answer."""
    proc = await start_api(kernel, (port := free_port()), TOLLWAY_RECONCILE_AFTER_S="600")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as remote:
            call = asyncio.create_task(remote.post(path, json=body, headers=auth))
            await wait_until(lambda: asyncio.sleep(0, Path(body["marker"]).exists()))
            proc.send_signal(signal.SIGKILL)  # while the tool runs
            await proc.wait()
            try:
                await call
                raise AssertionError("the killed process answered")
            except httpx.HTTPError:
                pass
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_debit_of_a_killed_call_is_refunded_with_a_receipt_on_restart(kernel_factory, tmp_path):
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin()), ("crash", CrashPlugin())])
    gate, marker = tmp_path / "gate", tmp_path / "started"
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")

    body = {"a": 1, "b": 2, "gate": str(gate), "marker": str(marker)}
    await kill_during_call(kernel, "/v1/tools/test/gate-inline", body, auth)
    second = None
    try:
        held = await CreditHold.select().first()
        assert held["state"] == "held" and held["amount"] == 2_000
        assert await Receipt.count() == 0
        async with http_client(kernel) as client:
            balance = (await client.get("/v1/balance", headers=auth)).json()
            report = (await client.get("/v1/tools/internal/pending", headers=OPERATOR)).json()
        assert balance["credits_balance"] == "0.998000"
        assert [(p["kind"], p["id"]) for p in report["pending"]] == [("credit_hold", held["id"])]

        # The next start: its reconciler refunds the hold of the dead process.
        second = await start_api(
            kernel, free_port(), TOLLWAY_RECONCILE_AFTER_S="0.2", TOLLWAY_RECONCILE_INTERVAL_S="0.2"
        )

        async def refunded() -> bool:
            return (await CreditHold.select(CreditHold.state).first())["state"] == "refunded"

        await wait_until(refunded)
    finally:
        if second is not None and second.returncode is None:
            second.kill()
            await second.wait()
    async with http_client(kernel) as client:
        balance = (await client.get("/v1/balance", headers=auth)).json()
        receipts = (await client.get("/v1/analytics/receipts", headers=auth)).json()
    assert balance["credits_balance"] == "1.000000"
    (receipt,) = receipts["receipts"]
    assert receipt["receipt_id"] == held["receipt_id"] and receipt["job_id"] == held["id"]
    assert (
        receipt["status"] == "refunded"
        and receipt["execution_status"] == "failed"
        and receipt["refund_reason"] == "interrupted"
    )
    assert [r["revision"] for r in await kernel.receipts.revisions(receipt["receipt_id"])] == [1, 2]
    assert await LedgerEntry.count().where(LedgerEntry.kind == "refund") == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_call_charged_in_one_commit_and_killed_while_running_charged_nothing(kernel_factory, tmp_path):
    """The other path: a tool charged in the commit after its run (`credit_hold=False`). Killed
    while it runs, the process leaves nothing to end: no debit, no hold, no receipt; a retry
    on a live process is charged once."""
    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin()), ("crash", CrashPlugin())])
    gate, marker = tmp_path / "gate", tmp_path / "started"
    body = {"a": 1, "b": 2, "gate": str(gate), "marker": str(marker)}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")

    await kill_during_call(kernel, "/v1/tools/test/gate-inline-one-commit", body, auth)
    second = None
    try:
        assert await CreditHold.count() == 0 and await Receipt.count() == 0
        assert await LedgerEntry.count().where(LedgerEntry.kind == "spend") == 0
        async with http_client(kernel) as client:
            assert (await client.get("/v1/balance", headers=auth)).json()["credits_balance"] == "1.000000"
            assert (await client.get("/v1/tools/internal/pending", headers=OPERATOR)).json()["pending"] == []

        gate.write_text("open")  # the retry runs through
        port = free_port()
        second = await start_api(kernel, port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as remote:
            answer = await remote.post("/v1/tools/test/gate-inline-one-commit", json=body, headers=auth)
        assert answer.status_code == 200, answer.text
    finally:
        if second is not None and second.returncode is None:
            second.kill()
            await second.wait()
    async with http_client(kernel) as client:
        assert (await client.get("/v1/balance", headers=auth)).json()["credits_balance"] == "0.998000"
        (receipt,) = (await client.get("/v1/analytics/receipts", headers=auth)).json()["receipts"]
    assert receipt["receipt_id"] == answer.json()["data"]["receipt_id"] and receipt["status"] == "settled"
    assert await CreditHold.count() == 0
    assert await check_ledger(max_intermediate_age_s=0) == []
