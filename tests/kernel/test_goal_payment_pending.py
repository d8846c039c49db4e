"""A compute goal paid by an x402 payment the facilitator has not settled does not run, on
SQLite and PostgreSQL, against a real facilitator over HTTP: its job waits (visible on the
Job resource), no session runs and the model is never called; when the transfer lands the
reconciler starts it, and when the facilitator refuses it the job fails `payment_failed`,
nothing charged and nothing spent. The ledger check holds at each step."""

from __future__ import annotations

from typing import Any

import pytest
from eth_account import Account
from litestar import Litestar, Request, post

from tests.support.facilitator_server import running_facilitator
from tests.support.serving import serve_app
from tollway._core.credits.ledger_check import check_ledger
from tollway.testing import http_client, pay_402, proof_headers
from tollway_goals.runner import SessionRunner

GOAL = {"goal": "Say hello once.", "params": {"budget_usdc": "5"}}


@pytest.fixture
async def model():
    """An OpenAI-compatible chat endpoint that counts the calls and always ends the turn."""
    calls: list[dict[str, Any]] = []

    @post("/v1/chat/completions", status_code=200)
    async def complete(request: Request) -> dict[str, Any]:
        data = await request.json()
        calls.append(data)
        message = {"role": "assistant", "content": "Hello. Nothing more to do."}
        return {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": data.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }

    async with serve_app(Litestar([complete])) as url:
        yield url, calls


@pytest.fixture
async def facilitator():
    async with running_facilitator("base-sepolia") as fac:
        yield fac


async def _goal_paid_late(kernel_factory, facilitator, model_url: str):
    kernel = await kernel_factory(
        installed={"tollway_goals", "tollway_web"},
        env={
            "TOLLWAY_NETWORK": "base-sepolia",
            "TOLLWAY_FACILITATOR_URL": facilitator.url,
            "TOLLWAY_FACILITATOR_TIMEOUT_S": "1",
            "TOLLWAY_CHAIN_RPC_URL": facilitator.url + "/rpc",
            "TOLLWAY_LLM_BASE_URL": model_url + "/v1",
            "TOLLWAY_LLM_MODEL": "counted",
        },
    )
    payer = Account.create()
    facilitator.fund(payer.address, 20_000_000)
    async with http_client(kernel) as client:
        quote = await client.post("/v1/compute", json=GOAL)
        paid = {
            "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"], "base-sepolia"),
            "X-Quote-ID": quote.json()["quote_id"],
        }
        facilitator.settle_mode = "hang"
        accepted = await client.post("/v1/compute", json=GOAL, headers=paid)
    assert accepted.status_code == 202, accepted.text
    assert "has not settled" in accepted.json()["message"]
    return kernel, payer, accepted.json()


async def _job(kernel, payer, job_id: str) -> dict[str, Any]:
    async with http_client(kernel) as client:
        return (await client.get(f"/v1/requests/{job_id}", headers={"X-Agent-ID": payer.address})).json()


async def test_a_goal_runs_only_once_its_payment_settles(kernel_factory, facilitator, model) -> None:
    url, calls = model
    kernel, payer, accepted = await _goal_paid_late(kernel_factory, facilitator, url)
    runner = SessionRunner(kernel.platform, owner="test")
    await runner.run_until_idle()
    job = await _job(kernel, payer, accepted["request_id"])
    assert job["status"] == "pending" and "payment" in job["message"]
    assert calls == []  # nothing was spent on an unpaid goal
    assert await check_ledger() == []

    facilitator.settle_finished.clear()
    facilitator.release()
    await facilitator.settle_finished.wait()  # the transfer landed after the service stopped waiting
    facilitator.settle_mode = "ok"
    await kernel.reconciler.run_once(grace_s=0)
    await runner.run_until_idle()
    assert len(calls) >= 1  # paid: the goal's session ran
    assert facilitator.balance(payer.address) == 15_000_000
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_goal_whose_payment_is_refused_never_runs_and_costs_nothing(kernel_factory, facilitator, model) -> None:
    url, calls = model
    kernel, payer, accepted = await _goal_paid_late(kernel_factory, facilitator, url)
    facilitator.settle_mode = "fail"
    facilitator.settle_finished.clear()
    facilitator.release()
    await facilitator.settle_finished.wait()  # the hanging settlement is refused after all
    await kernel.reconciler.run_once(grace_s=0)
    await SessionRunner(kernel.platform, owner="test").run_until_idle()
    job = await _job(kernel, payer, accepted["request_id"])
    assert (job["status"], job["error_code"], job["error_status"]) == ("failed", "payment_failed", 402)
    async with http_client(kernel) as client:
        (receipt,) = (await client.get("/v1/analytics/receipts", headers={"X-Agent-ID": payer.address})).json()[
            "receipts"
        ]
        path = f"/v1/compute/{accepted['goal_id']}"
        goal = await client.get(path, headers=proof_headers(payer, scope="read", method="GET", path=path))
    assert receipt["status"] == "not_charged" and receipt["execution_status"] == "failed"
    assert goal.status_code == 404  # the goal was never written
    assert calls == [] and facilitator.transactions == [] and facilitator.balance(payer.address) == 20_000_000
    assert await check_ledger(max_intermediate_age_s=0) == []
