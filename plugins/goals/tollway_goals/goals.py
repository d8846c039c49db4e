"""Goals: created with their root session in the transaction that accepts the paid
compute call, read by their creator only (anyone else gets 404) with their progress, and
their cases done check."""
from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from msgspec import UNSET, to_builtins

from tollway import AcceptedJob, Refusal, to_micro, usdc

from . import db, progress
from .ids import goal_id_for, iso, new_id, next_seq, now_ms
from .settings import CASES_ENABLED_FOR
from .wire import DEFAULT_BUDGET_USDC, ComputeInput, DoneCheckState, GoalState

DEFAULT_BUDGET = to_micro(DEFAULT_BUDGET_USDC)  # the least a goal costs, and its budget when none is given


def cases_enabled(agent_id: str, wallet: str | None, settings: Mapping[str, str]) -> bool:
    allowed = (settings.get(CASES_ENABLED_FOR.name) or CASES_ENABLED_FOR.default or "").strip()
    if allowed == "*":
        return True
    names = {n.strip().lower() for n in allowed.split(",") if n.strip()}
    return agent_id.lower() in names or (wallet or "").lower() in names


async def create(job: AcceptedJob, *, cases: bool) -> str:
    """The goal and its root session (pending, holding the goal as its first message)."""
    value: ComputeInput = job.value
    params = None if value.params is UNSET else value.params
    limits = getattr(params, "agent_limits", None)
    done = getattr(params, "done_check", None)
    url = getattr(params, "result_webhook_url", None)
    goal_id = goal_id_for(job.request_id)
    now = now_ms()
    await db.rows(
        "INSERT INTO goals_goals (id, agent_id, request_id, receipt_id, goal, status, budget, spent, held, cases_enabled, max_depth, max_awake, "
        "done_check, result_webhook_url, webhook_secret, created_ms, updated_ms, seq) "
        "VALUES ({}, {}, {}, {}, {}, 'running', {}, 0, 0, {}, {}, {}, {}, {}, {}, {}, {}, {})",
        goal_id, job.agent_id, job.request_id, job.receipt_id, value.goal, job.price, cases,
        3 if limits in (None, UNSET) else limits.max_depth, 20 if limits in (None, UNSET) else limits.max_awake,
        db.dumps(to_builtins(done)) if done not in (None, UNSET) else None, url if url not in (None, UNSET) else None,
        _new_secret(), now, now, next_seq(),
    )
    session_id = new_id("ses")
    await db.rows(
        "INSERT INTO goals_sessions (id, goal_id, case_id, parent_session_id, depth, status, inbox, lease_owner, lease_until_ms, attempt, steps, "
        "created_ms, updated_ms) VALUES ({}, {}, NULL, NULL, 0, 'pending', 1, NULL, 0, 0, 0, {}, {})",
        session_id, goal_id, now, now,
    )
    await add_message(session_id, "goal", value.goal)
    return goal_id


def _new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


async def add_message(session_id: str, source: str, text: str, extra: Mapping[str, Any] | None = None) -> None:
    """A message the session takes in on its next run (the goal, an event's task, a reply)."""
    await db.rows(
        "INSERT INTO goals_steps (id, session_id, seq, kind, body, cost, created_ms) VALUES ({}, {}, {}, 'message', {}, 0, {})",
        new_id("stp"), session_id, next_seq(), db.dumps({"source": source, "text": text, **(extra or {})}), now_ms(),
    )


async def owned(goal_id: str, agent_id: str, *, lock: bool = False) -> dict[str, Any]:
    """The goal, when `agent_id` created it; 404 otherwise (whether or not it exists)."""
    goal = await db.row("SELECT * FROM goals_goals WHERE id = {} AND agent_id = {}" + (db.for_update() if lock else ""), goal_id, agent_id)
    if goal is None:
        raise Refusal("not_found", "No such goal for this agent.", status=404)
    return goal


def finished_states(goal: Mapping[str, Any]) -> set[str]:
    """States that end a case: done and failed, and those the goal's done check names."""
    check = db.loads(goal["done_check"]) or {}
    return {"done", "failed", *check.get("finished_states", [])}


async def done_check_state(goal: Mapping[str, Any]) -> DoneCheckState | None:
    """The done check as given, each field shown (a default when left out), and whether it is
    met now (with no cases it is not)."""
    check = db.loads(goal["done_check"])
    if check is None:
        return None
    cases = await db.rows("SELECT state, owner FROM goals_cases WHERE goal_id = {}", goal["id"])
    finished = list(check["finished_states"])
    owner_needed = list(check.get("owner_required_for") or [])
    min_cases = int(check.get("min_cases", 1))

    def counts(case: Mapping[str, Any]) -> bool:
        return case["state"] in finished and (case["state"] not in owner_needed or bool((case["owner"] or "").strip()))

    met = len(cases) >= min_cases and len(cases) > 0 and all(counts(c) for c in cases)
    return DoneCheckState(kind=check.get("kind", "cases"), finished_states=finished, owner_required_for=owner_needed, min_cases=min_cases,
                          met=met, cases=len(cases), finished=sum(1 for c in cases if counts(c)))


async def goal_state(goal: Mapping[str, Any]) -> GoalState:
    ended, returned = goal["ended_ms"], goal["returned"]
    return GoalState(
        goal_id=goal["id"], status=goal["status"], goal=goal["goal"], budget_usdc=usdc(int(goal["budget"])),
        spent_usdc=usdc(int(goal["spent"])), held_usdc=usdc(int(goal["held"])), returned_usdc=usdc(int(returned)) if returned is not None else None,
        cases_enabled=bool(goal["cases_enabled"]), done_check=await done_check_state(goal), progress=await progress.of_goal(goal),
        created_at=iso(int(goal["created_ms"])), updated_at=iso(int(goal["updated_ms"])), ended_at=iso(int(ended)) if ended is not None else None,
    )
