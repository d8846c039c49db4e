"""The agent loop on SQLite and PostgreSQL, against a scripted Chat Completions server:
case sessions keep their records through the case tools, every model step is charged to
the goal's budget exactly, the step limit and the budget move a case to needs_a_person
(with a notification, and no more spending), the awake cap holds, and a run that died
after holding a step gives the hold back and pays for the step once."""

from __future__ import annotations

from typing import Any

from chat_standin import call, chat_standin, last_role, last_user_text, turn
from goal_support import event, goals_kernel, new_goal

from tollway import storage
from tollway.testing import http_client
from tollway_goals import sessions
from tollway_goals.runner import SessionRunner

PLUGINS = {"tollway_goals", "tollway_web"}
STEP = 2_000  # micro-USDC per model step (the default 0.002)


def case_policy(request: dict[str, Any]) -> dict[str, Any]:
    """Root: acknowledge. A case: set the record and a decision, then wait."""
    text = last_user_text(request)
    if last_role(request) == "tool":
        return turn("Waiting for the customer.")
    if "Chase" in text:
        return turn(
            None,
            call(
                "update_case",
                "c1",
                state="chasing",
                owner="Ana",
                next_action="email the customer",
                add_evidence=["inv.pdf"],
            ),
            call("record_decision", "c2", decision="Email first", reason="cheapest channel"),
        )
    return turn("Noted.")


async def kernel_with(kernel_factory, chat) -> Any:
    return await goals_kernel(kernel_factory, env=chat.env, installed=PLUGINS)


async def test_case_sessions_keep_their_records_and_pay_each_step(kernel_factory) -> None:
    with chat_standin(case_policy) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, params={"budget_usdc": "5"})
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="inv-1", task="Chase invoice 1")
            await event(client, gid, headers, event_id="2", case_key="inv-2", task="Chase invoice 2")
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=headers)).json()["data"]
            state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            again = await event(
                client, gid, headers, event_id="3", case_key="inv-1", task="The customer says it is paid."
            )
            await runner.run_until_idle()
            after = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
    assert record["state"] == "chasing" and record["owner"] == "Ana" and record["next_action"] == "email the customer"
    assert record["evidence"] == ["inv.pdf"] and record["status"] == "waiting"
    assert [d["decision"] for d in record["decisions"]] == ["Email first"] and record["decisions"][0][
        "reason"
    ] == "cheapest channel"
    # root: 1 step; each case: 2 steps (tool calls, then the note)
    assert state["spent_usdc"] == f"{5 * STEP / 1e6:.6f}" and state["held_usdc"] == "0.000000"
    assert again.json()["outcome"] == "already_open"
    assert after["spent_usdc"] == f"{6 * STEP / 1e6:.6f}"
    # every request after the first of a case carries its earlier turns and the tool results
    tool_turns = [r for r in chat.requests if r["messages"][-1]["role"] == "tool"]
    assert len(tool_turns) == 2 and all(len(r["tools"]) >= 3 for r in chat.requests)


async def test_the_step_limit_moves_the_case_to_needs_a_person_and_stops_spending(kernel_factory) -> None:
    with chat_standin(case_policy) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            agent_id, headers, goal = await new_goal(client)
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="k", task="Chase it", step_limit=1)
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{gid}/cases/k", headers=headers)).json()["data"]
            spent = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]["spent_usdc"]
            notes = (await client.get("/v1/tools/notifications", headers=headers)).json()
            more = await event(client, gid, headers, event_id="2", case_key="k", task="Chase again", step_limit=3)
            await runner.run_until_idle()
            resumed = (await client.get(f"/v1/compute/{gid}/cases/k", headers=headers)).json()["data"]
    assert record["state"] == "needs_a_person" and record["status"] == "waiting"
    assert spent == f"{2 * STEP / 1e6:.6f}"  # the root's step and the case's one allowed step
    items = notes.get("data", notes)
    items = items.get("notifications", items) if isinstance(items, dict) else items
    needs = [n for n in items if n["type"] == "case_needs_a_person"]
    assert len(needs) == 1 and needs[0]["metadata"]["case_key"] == "k" and needs[0]["metadata"]["reason"] == "steps"
    assert more.json()["outcome"] == "already_open" and resumed["state"] == "chasing" and resumed["status"] == "waiting"


async def test_a_case_never_spends_past_its_slice(kernel_factory) -> None:
    with chat_standin(case_policy) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client)
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="k", task="Chase it", budget_usdc="0.003")
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{gid}/cases/k", headers=headers)).json()["data"]
            case = await storage.row("SELECT spent, held, budget FROM goals_cases WHERE case_key = 'k'")
            goal_row = await storage.row("SELECT spent, held, budget FROM goals_goals WHERE id = {}", gid)
    assert record["state"] == "needs_a_person"
    assert int(case["spent"]) == STEP and int(case["held"]) == 0 and int(case["budget"]) == 3_000
    # the goal holds what the slice has left, and spent the root's step and the case's
    assert int(goal_row["spent"]) == 2 * STEP and int(goal_row["held"]) == 1_000


async def test_the_awake_cap_limits_running_sessions_of_a_goal(kernel_factory) -> None:
    with chat_standin(case_policy) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, params={"agent_limits": {"max_awake": 2}})
            for i in range(4):
                await event(client, goal["goal_id"], headers, event_id=str(i), case_key=f"k{i}", task="t")
        claimed = await sessions.claim("w1", 60, 10)
        more = await sessions.claim("w2", 60, 10)
    assert len(claimed) == 2 and more == []


async def test_a_run_that_died_holding_a_step_pays_for_it_once(kernel_factory) -> None:
    with chat_standin(case_policy) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client)
            gid = goal["goal_id"]
            # a worker claims the root session, holds its first step, and dies
            [dead] = await sessions.claim("dead-worker", 60, 1)
            from tollway_goals import budget
            from tollway_goals.ids import new_id, next_seq, now_ms

            async with storage.transaction():
                assert await budget.hold_step(gid, None, STEP, counts_step=True) is None
                await storage.rows(
                    "INSERT INTO goals_steps (id, session_id, seq, kind, body, cost, created_ms) VALUES ({}, {}, {}, 'hold', {}, 0, {})",
                    new_id("stp"),
                    dead.session_id,
                    next_seq(),
                    storage.dumps({"amount": STEP, "for": "llm"}),
                    now_ms(),
                )
            held = await storage.row("SELECT held FROM goals_goals WHERE id = {}", gid)
            await storage.rows("UPDATE goals_sessions SET lease_until_ms = 0 WHERE id = {}", dead.session_id)
            await runner.run_until_idle()
            final = await storage.row("SELECT spent, held FROM goals_goals WHERE id = {}", gid)
            steps = await storage.rows(
                "SELECT kind FROM goals_steps WHERE session_id = {} ORDER BY seq", dead.session_id
            )
            stale = await sessions.still_ours(dead)
    assert int(held["held"]) == STEP
    assert int(final["spent"]) == STEP and int(final["held"]) == 0
    assert [s["kind"] for s in steps] == ["message", "llm"] and not stale
    assert len(chat.requests) == 1


def finishing_root(request: dict[str, Any]) -> dict[str, Any]:
    if "You run the goal's root" in request["messages"][0]["content"]:
        if request["messages"][-1]["role"] == "tool":
            return turn("All done.")
        return turn(None, call("finish", "f1", summary="Nothing left to do."))
    return case_policy(request)


async def test_a_finished_goal_returns_its_unspent_budget_once(kernel_factory) -> None:
    from tollway.testing import ledger_problems

    with chat_standin(finishing_root) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, credits="20", params={"budget_usdc": "8"})
            gid = goal["goal_id"]
            await runner.run_until_idle()
            state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            balance = (await client.get("/v1/balance", headers=headers)).json()
            receipt = (await client.get(f"/v1/receipts/{goal['receipt_id']}", headers=headers)).json()
            late = await event(client, gid, headers, event_id="late", case_key="k", task="Chase it")
            await runner.run_until_idle()
            after = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            problems = await ledger_problems()
    # one model step spent (0.002): 7.998 of the 8.00 budget comes back; 12 were never spent
    assert state["status"] == "completed" and state["spent_usdc"] == "0.002000" and state["budget_usdc"] == "8.000000"
    assert state["returned_usdc"] == "7.998000"
    assert balance["credits_balance"] == "19.998000"
    body = receipt.get("data", receipt)
    assert body["returned_usdc"] == "7.998000" and body["revision"] == 2 and body["status"] == "settled"
    assert (
        late.status_code == 409 and after["spent_usdc"] == "0.002000"
    )  # an ended goal takes no events, and never runs again
    assert problems == []


async def test_a_completed_goal_cancels_its_waiting_case_sessions(kernel_factory) -> None:
    with chat_standin(case_policy) as chat:
        kernel = await kernel_with(kernel_factory, chat)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client)
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="inv-1", task="Chase invoice 1")
            await runner.run_until_idle()
            from tollway_goals import ending

            async with storage.transaction():
                returned = await ending.end(gid, "completed", kernel.platform)
            again = await ending.end(gid, "completed", kernel.platform)
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=headers)).json()["data"]
    assert returned == 5_000_000 - 3 * STEP and again == 0
    assert record["status"] == "cancelled" and len(chat.requests) == 3  # nothing ran after the goal ended
