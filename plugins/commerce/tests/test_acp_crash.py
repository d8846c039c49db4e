"""Fault test on SQLite and PostgreSQL: the API process (`tollway serve`) is SIGKILLed after
Stripe charged the card and before our transaction committed — the local Stripe kills it
while answering the PaymentIntent. The session is left `complete_in_progress`; the
reconciler finds the payment by its idempotency key and either completes the order (one
charge, one order, one receipt, the credits) or, when the order can no longer be completed
(the soul's service was withdrawn meanwhile), refunds it in full. The ledger check holds."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from commerce_support import AcpClient, env_for, issue_token, register_agent, stripe_standin
from eth_account import Account

from tollway import storage
from tollway.testing import http_client, ledger_problems, proof_headers
from tollway_commerce import reconciler

TOLLWAY = shutil.which("tollway") or str(Path(sys.executable).parent / "tollway")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _serve(kernel: Any, port: int, env: dict[str, str]) -> asyncio.subprocess.Process:
    plugin_env = kernel.config.plugin_env
    full = {
        **os.environ,
        **env,
        "TOLLWAY_HOME": plugin_env["TOLLWAY_HOME"],
        "TOLLWAY_DATABASE_URL": kernel.db.url,
        "TOLLWAY_RECEIPT_KEY": plugin_env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_NETWORK": "local",
        "TOLLWAY_OFFLINE": "1",
    }
    proc = await asyncio.create_subprocess_exec(
        TOLLWAY,
        "serve",
        "--port",
        str(port),
        "--workers",
        "0",
        env=full,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    async with httpx.AsyncClient(timeout=2) as probe:
        for _ in range(600):
            try:
                if (await probe.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    proc.kill()
    raise AssertionError("tollway serve did not start")


async def _soul(client: httpx.AsyncClient) -> None:
    seller = Account.create()
    raw = json.dumps(
        {
            "slug": "quick",
            "name": "Quick",
            "category": "data",
            "services": [{"slug": "answer", "title": "An answer", "price_usdc": "3", "category": "data"}],
        }
    ).encode()
    headers = {
        **proof_headers(seller, scope="write", method="POST", path="/v1/soul/register", body=raw),
        "content-type": "application/json",
    }
    assert (await client.post("/v1/soul/register", content=raw, headers=headers)).status_code in (200, 201)


@pytest.mark.parametrize("ending", ["completed", "refunded"])
async def test_a_kill_between_the_charge_and_the_commit_is_finished_by_the_reconciler(kernel_factory, ending) -> None:
    async with stripe_standin() as stripe:
        env = env_for(stripe, TOLLWAY_COMMERCE_IN_FLIGHT_S="1")
        kernel = await kernel_factory(installed={"tollway_commerce", "tollway_souls"}, env=env)
        async with http_client(kernel) as client:
            agent = await register_agent(client)
            token = (await issue_token(client, agent))["token"]
            item = "credits_20usd"
            if ending == "refunded":
                await _soul(client)
                item = "soul:quick/answer"
            session = await AcpClient(client, token).create(item)
        port = _free_port()
        api = await _serve(kernel, port, env)
        stripe.before_answer = lambda _pi: api.send_signal(signal.SIGKILL)  # charged; our side never hears back
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as remote:
                remote_acp = AcpClient(remote, token)
                with pytest.raises(httpx.HTTPError):
                    await remote_acp.complete(session["id"], stripe.grant())
            await api.wait()
        finally:
            if api.returncode is None:
                api.kill()
                await api.wait()
        stripe.before_answer = None
        assert len(stripe.succeeded()) == 1  # the card was charged
        row = await storage.row("SELECT status FROM commerce_sessions WHERE id = {}", session["id"])
        assert row["status"] == "complete_in_progress"  # and nothing of ours committed
        assert await storage.row("SELECT id FROM commerce_orders WHERE session_id = {}", session["id"]) is None
        if ending == "refunded":  # the seller withdraws the service before the reconciler runs
            await storage.execute("UPDATE souls_services SET enabled = {}", False)
        await asyncio.sleep(1.1)  # past TOLLWAY_COMMERCE_IN_FLIGHT_S
        assert await reconciler.sweep(kernel.context) == 1
        assert await reconciler.sweep(kernel.context) == 0  # done once
        assert len(stripe.intents) == 1 and len(stripe.succeeded()) == 1  # found again by its key, not charged twice
        state = await storage.row("SELECT status FROM commerce_sessions WHERE id = {}", session["id"])
        orders = await storage.rows("SELECT id FROM commerce_orders WHERE session_id = {}", session["id"])
        receipts = await storage.rows("SELECT receipt_id FROM tw_receipts WHERE job_id = {}", session["id"])
        credits = int((await storage.row("SELECT credits FROM tw_agents WHERE id = {}", agent))["credits"])
        if ending == "completed":
            assert state["status"] == "completed" and len(orders) == 1 and len(receipts) == 1
            assert credits == 20_000_000
            assert stripe.refunds == []
        else:
            assert state["status"] == "canceled" and orders == [] and receipts == []
            assert [r["amount"] for r in stripe.refunds] == [300]
            assert credits == 0
        assert await ledger_problems() == []
