"""Ending a goal on SQLite and PostgreSQL: the creator cancels it (its unspent budget
returned exactly once, every session stopped at its next step, the result webhook told),
a cancel racing a step in flight, an idle goal ended after the idle time, the goal's
progress, and the default budget shown before payment."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from chat_standin import call, chat_standin, last_role, last_user_text, turn
from goal_support import event, goals_kernel, new_goal
from mail_and_hooks import hook_receiver

from tollway import storage
from tollway.testing import credits_session, decode_payment_required, http_client, ledger_problems
from tollway_goals import ending
from tollway_goals.runner import SessionRunner

STEP = 2_000  # micro-USDC per model step (the default 0.002)


def chasing(request: dict[str, Any]) -> dict[str, Any]:
    """Root: acknowledge. A case: set its record and a decision, then wait."""
    if last_role(request) == "tool":
        return turn("Waiting for the customer.")
    if "Chase" in last_user_text(request):
        return turn(
            None,
            call("update_case", "c1", state="chasing", owner="Ana"),
            call("record_decision", "c2", decision="Email first"),
        )
    return turn("Noted.")


async def cancel(client: Any, gid: str, headers: dict[str, str]) -> Any:
    return await client.post(f"/v1/compute/{gid}/cancel", headers=headers)


async def test_cancel_returns_the_unspent_budget_stops_the_sessions_and_tells_the_webhook(kernel_factory) -> None:
    with chat_standin(chasing) as chat, hook_receiver() as hooks:
        kernel = await goals_kernel(kernel_factory, env=chat.env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(
                client, credits="20", params={"budget_usdc": "8", "result_webhook_url": hooks.url}
            )
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="inv-1", task="Chase invoice 1")
            await runner.run_until_idle()
            progress = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]["progress"]
            asked = len(chat.requests)
            resp = await cancel(client, gid, headers)
            await runner.run_until_idle()
            await kernel.webhooks.run_due()
            state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            case = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=headers)).json()["data"]
            balance = (await client.get("/v1/balance", headers=headers)).json()
            receipt = (await client.get(f"/v1/receipts/{goal['receipt_id']}", headers=headers)).json()
            secret = (await client.get(f"/v1/compute/{gid}/result-webhook", headers=headers)).json()["data"]["secret"]
            sessions = await storage.rows("SELECT status FROM goals_sessions WHERE goal_id = {}", gid)
            problems = await ledger_problems()
    spent = 3 * STEP  # the root's step and the case's two
    assert progress["model_steps"] == 3 and progress["tool_calls"] == 2
    assert progress["last_action"]["case_key"] == "inv-1" and progress["last_action"]["kind"] == "model"
    assert "Waiting for the customer." in progress["last_action"]["summary"]
    assert resp.status_code == 200, resp.text
    body = resp.json()["data"]
    assert (
        body["status"] == "cancelled"
        and body["ended_at"]
        and body["returned_usdc"] == f"{(8_000_000 - spent) / 1e6:.6f}"
    )
    assert (
        state["status"] == "cancelled"
        and state["spent_usdc"] == f"{spent / 1e6:.6f}"
        and state["held_usdc"] == "0.000000"
    )
    assert state["budget_usdc"] == "8.000000" and state["returned_usdc"] == body["returned_usdc"]
    assert len(chat.requests) == asked  # nothing ran after the cancel
    assert {s["status"] for s in sessions} == {"cancelled"} and case["status"] == "cancelled"
    assert balance["credits_balance"] == f"{(20_000_000 - spent) / 1e6:.6f}"
    assert receipt.get("data", receipt)["returned_usdc"] == body["returned_usdc"]
    [(hook_headers, raw)] = hooks.received
    assert kernel.platform.verify_webhook(secret, raw, hook_headers["x-service-signature"])
    told = json.loads(raw)
    assert told["event"] == "goal.ended" and told["goal_id"] == gid and told["status"] == "cancelled"
    assert told["returned_usdc"] == body["returned_usdc"] and told["spent_usdc"] == state["spent_usdc"]
    assert problems == []


def finishing_root(request: dict[str, Any]) -> dict[str, Any]:
    if last_role(request) == "tool":
        return turn("All done.")
    return turn(None, call("finish", "f1", summary="Nothing left to do."))


async def test_cancel_is_idempotent_and_refused_for_a_goal_that_ended_otherwise(kernel_factory) -> None:
    with chat_standin(finishing_root) as chat:
        kernel = await goals_kernel(kernel_factory, env=chat.env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, credits="20", params={"budget_usdc": "6"})
            gid = goal["goal_id"]
            _other, other = await credits_session(client, "1")
            stranger = await cancel(client, gid, other)
            nobody = await client.post(f"/v1/compute/{gid}/cancel")
            at_once = await asyncio.gather(*(cancel(client, gid, headers) for _ in range(5)))
            again = await cancel(client, gid, headers)
            balance = (await client.get("/v1/balance", headers=headers)).json()
            _agent2, headers2, done = await new_goal(client, credits="10")
            await runner.run_until_idle()
            finished = await cancel(client, done["goal_id"], headers2)
            state = (await client.get(f"/v1/compute/{done['goal_id']}", headers=headers2)).json()["data"]
            problems = await ledger_problems()
    assert stranger.status_code == 404 and nobody.status_code == 401
    assert [r.status_code for r in at_once] == [200] * 5 and again.status_code == 200
    assert {r.json()["data"]["returned_usdc"] for r in (*at_once, again)} == {"6.000000"}
    assert balance["credits_balance"] == "20.000000"  # returned once, not five times
    assert finished.status_code == 409 and finished.json()["error"] == "goal_ended"
    assert state["status"] == "completed"
    assert problems == []


@pytest.mark.parametrize("step", ["answers", "fails"])
async def test_a_cancel_racing_a_running_step_returns_the_rest_once(kernel_factory, step) -> None:
    arrived, release = threading.Event(), threading.Event()

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        arrived.set()
        release.wait(20)
        if step == "fails":
            raise RuntimeError("the model is down")
        return turn(None, call("record_decision", "d1", decision="keep going"))

    with chat_standin(slow) as chat:
        kernel = await goals_kernel(kernel_factory, env=chat.env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, credits="5")
            gid = goal["goal_id"]
            running = asyncio.create_task(runner.run_until_idle())
            assert await asyncio.to_thread(arrived.wait, 20)
            during = await cancel(client, gid, headers)
            release.set()
            await running
            state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            balance = (await client.get("/v1/balance", headers=headers)).json()
            holds = await storage.rows("SELECT id FROM goals_steps WHERE kind = 'hold'")
            problems = await ledger_problems()
    spent = STEP if step == "answers" else 0
    assert during.status_code == 200 and during.json()["data"]["status"] == "cancelled"
    assert (
        during.json()["data"]["returned_usdc"] is None and during.json()["data"]["held_usdc"] == "0.002000"
    )  # a step in flight
    assert len(chat.requests) == 1  # stopped at its next step
    assert state["spent_usdc"] == f"{spent / 1e6:.6f}" and state["held_usdc"] == "0.000000" and holds == []
    assert state["returned_usdc"] == f"{(5_000_000 - spent) / 1e6:.6f}"
    assert balance["credits_balance"] == f"{(5_000_000 - spent) / 1e6:.6f}"
    assert problems == []


async def test_an_idle_goal_ends_after_the_idle_time_and_returns_its_budget(kernel_factory) -> None:
    with chat_standin(lambda request: turn("Noted.")) as chat:
        kernel = await goals_kernel(kernel_factory, env={**chat.env, "TOLLWAY_GOALS_IDLE_TIMEOUT_S": "1"})
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, credits="5")
            gid = goal["goal_id"]
            await runner.run_until_idle()
            await ending.sweep(kernel.platform)
            early = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            await asyncio.sleep(1.2)
            await ending.sweep(kernel.platform)
            await ending.sweep(kernel.platform)
            state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            balance = (await client.get("/v1/balance", headers=headers)).json()
            late = await event(client, gid, headers, event_id="1", task="still there?")
            problems = await ledger_problems()
    assert early["status"] == "running" and early["progress"]["model_steps"] == 1
    assert (
        early["progress"]["last_action"]["summary"] == "Noted." and early["progress"]["last_action"]["case_key"] is None
    )
    assert state["status"] == "expired" and state["returned_usdc"] == "4.998000" and state["held_usdc"] == "0.000000"
    assert balance["credits_balance"] == "4.998000"
    assert late.status_code == 409 and late.json()["error"] == "goal_ended"
    assert problems == []


async def test_the_default_budget_shows_in_the_quote_and_the_schema(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        quote = await client.post("/v1/compute", json={"goal": "Keep every invoice paid."})
        doc = (await client.get("/schema/openapi.json")).json()
    assert quote.status_code == 402, quote.text
    assert quote.json()["amount_usdc"] == "5.000000"
    described = decode_payment_required(quote.headers["PAYMENT-REQUIRED"])["resource"]["description"]
    assert "5.00" in described and "budget_usdc" in described
    params = doc["components"]["schemas"]["GoalParams"]["properties"]["budget_usdc"]
    assert params["default"] == "5.00" and "5.00" in params["description"]
    assert {"minimum": 5} in [{k: v for k, v in branch.items() if k == "minimum"} for branch in params["anyOf"]]


async def test_a_cancelled_goal_whose_worker_died_mid_step_is_settled_by_the_periodic_pass(kernel_factory) -> None:
    from tollway_goals import budget, sessions
    from tollway_goals.ids import new_id, next_seq, now_ms

    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client, credits="5")
        gid = goal["goal_id"]
        [dead] = await sessions.claim("dead-worker", 60, 1)  # a worker holds a step of the root, then dies
        async with storage.transaction():
            assert await budget.hold_step(gid, None, STEP, counts_step=True) is None
            await budget.take_hold(dead.session_id, new_id("stp"), next_seq(), {"amount": STEP, "for": "llm"}, now_ms())
        during = (await cancel(client, gid, headers)).json()["data"]
        await ending.sweep(kernel.platform)  # its lease still runs: the step may yet be stored
        still = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
        await storage.rows("UPDATE goals_sessions SET lease_until_ms = 0 WHERE id = {}", dead.session_id)
        await ending.sweep(kernel.platform)
        await ending.sweep(kernel.platform)
        state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
        balance = (await client.get("/v1/balance", headers=headers)).json()
        late = await sessions.still_ours(dead)
        problems = await ledger_problems()
    assert during["returned_usdc"] is None and still["returned_usdc"] is None and still["held_usdc"] == "0.002000"
    assert (
        state["returned_usdc"] == "5.000000" and state["held_usdc"] == "0.000000" and state["spent_usdc"] == "0.000000"
    )
    assert balance["credits_balance"] == "5.000000" and not late
    assert problems == []
