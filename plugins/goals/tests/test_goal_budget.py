"""A goal never spends past its budget, whatever runs at once: holds taken concurrently by
many sessions (several PostgreSQL connections at a time), and a whole goal whose case
sessions keep spending in parallel until the budget stops them all."""

from __future__ import annotations

import asyncio

from chat_standin import call, chat_standin, turn
from goal_support import event, goals_kernel, new_goal

from tollway import storage
from tollway.testing import http_client
from tollway_goals import budget
from tollway_goals.runner import SessionRunner


async def test_concurrent_holds_never_pass_the_budget(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client, params={"budget_usdc": "5"})
        gid = goal["goal_id"]
        for i in range(8):
            await event(client, gid, headers, event_id=str(i), case_key=f"k{i}", task="t")
    cases = [r["id"] for r in await storage.rows("SELECT id FROM goals_cases WHERE goal_id = {}", gid)]

    async def spend(case_id: str) -> bool:
        async with storage.transaction():
            refused = await budget.hold_step(gid, case_id, 70_000, counts_step=True)
        if refused is not None:
            return False
        await asyncio.sleep(0)
        async with storage.transaction():
            await budget.charge_step(gid, case_id, 70_000, 70_000)
        return True

    results = await asyncio.gather(*(spend(cases[i % len(cases)]) for i in range(200)))
    final = await storage.row("SELECT spent, held, budget FROM goals_goals WHERE id = {}", gid)
    per_case = await storage.rows("SELECT spent FROM goals_cases WHERE goal_id = {}", gid)
    assert sum(results) == 5_000_000 // 70_000  # 71 steps fit, none more
    assert int(final["spent"]) == 71 * 70_000 and int(final["held"]) == 0
    assert sum(int(r["spent"]) for r in per_case) == int(final["spent"])


def spend_forever(request):
    if request["messages"][-1]["role"] == "tool" or "go" in request["messages"][-1]["content"]:
        return turn(None, call("record_decision", f"d{len(request['messages'])}", decision="keep going"))
    return turn("Noted.")


async def test_sub_agents_spending_in_parallel_stop_at_the_goals_budget(kernel_factory) -> None:
    with chat_standin(spend_forever) as chat:
        env = {**chat.env, "TOLLWAY_GOALS_LLM_STEP_USDC": "0.25", "TOLLWAY_GOALS_SESSIONS_PER_WORKER": "16"}
        kernel = await goals_kernel(kernel_factory, env=env, installed={"tollway_goals", "tollway_web"})
        runners = [SessionRunner(kernel.platform, owner=f"w{i}") for i in range(3)]
        async with http_client(kernel) as client:
            agent_id, headers, goal = await new_goal(client, params={"budget_usdc": "5"})
            gid = goal["goal_id"]
            for i in range(10):
                await event(client, gid, headers, event_id=str(i), case_key=f"k{i}", task="go")
            await asyncio.gather(*(r.run_until_idle() for r in runners))
            listing = (await client.get(f"/v1/compute/{gid}/cases", headers=headers)).json()
            final = await storage.row("SELECT spent, held, budget FROM goals_goals WHERE id = {}", gid)
            charged = await storage.row(
                "SELECT COALESCE(SUM(cost), 0) AS c FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id WHERE x.goal_id = {}",
                gid,
            )
            notes = (await client.get("/v1/tools/notifications?limit=100", headers=headers)).json()
    assert int(final["spent"]) == 5_000_000 and int(final["held"]) == 0  # 20 steps of 0.25, not one more
    assert int(charged["c"]) == 5_000_000
    assert listing["counts"] == {"needs_a_person": 10}
    items = notes.get("data", notes)
    items = items.get("notifications", items) if isinstance(items, dict) else items
    told = [
        n["metadata"]["case_key"] for n in items if n["type"] == "case_needs_a_person" and n["metadata"]["case_key"]
    ]
    assert sorted(told) == sorted(f"k{i}" for i in range(10))  # each case once (the root may be told too)


async def test_events_racing_the_steps_of_their_cases_lose_nothing(kernel_factory) -> None:
    """Events to cases (new slices, wakes) while three workers run those cases' steps: every
    event is taken, no run fails on a lock, and what was charged is what the steps cost."""
    from tollway.testing import ledger_problems

    def once_per_event(request):
        if request["messages"][-1]["role"] == "user" and "go" in request["messages"][-1]["content"]:
            return turn(None, call("record_decision", f"d{len(request['messages'])}", decision="on it"))
        return turn("Noted.")

    with chat_standin(once_per_event) as chat:
        env = {**chat.env, "TOLLWAY_GOALS_LLM_STEP_USDC": "0.01", "TOLLWAY_GOALS_SESSIONS_PER_WORKER": "8"}
        kernel = await goals_kernel(kernel_factory, env=env)
        runners = [SessionRunner(kernel.platform, owner=f"w{i}") for i in range(3)]
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, params={"budget_usdc": "20"})
            gid = goal["goal_id"]

            async def post(i: int) -> int:
                slice_ = {"budget_usdc": "0.2"} if i % 3 == 0 else {}
                return (
                    await event(client, gid, headers, event_id=str(i), case_key=f"k{i % 4}", task="go", **slice_)
                ).status_code

            async def work() -> None:
                for _ in range(6):
                    await asyncio.gather(*(r.run_until_idle() for r in runners))
                    await asyncio.sleep(0.05)

            statuses, _ = await asyncio.gather(asyncio.gather(*(post(i) for i in range(40))), work())
            await asyncio.gather(*(r.run_until_idle() for r in runners))
            final = await storage.row("SELECT spent, held, budget FROM goals_goals WHERE id = {}", gid)
            charged = await storage.row(
                "SELECT COALESCE(SUM(cost), 0) AS c FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id WHERE x.goal_id = {}",
                gid,
            )
            failed = await storage.rows("SELECT id FROM goals_sessions WHERE goal_id = {} AND status = 'failed'", gid)
            cases = await storage.rows("SELECT spent, held, budget FROM goals_cases WHERE goal_id = {}", gid)
            problems = await ledger_problems()
    assert list(statuses) == [202] * 40 and failed == []
    assert int(final["spent"]) == int(charged["c"]) > 0
    slices_left = sum(int(c["budget"]) - int(c["spent"]) for c in cases if c["budget"] is not None)
    assert int(final["held"]) == slices_left  # only the slices' unspent parts stay set aside
    assert problems == []
