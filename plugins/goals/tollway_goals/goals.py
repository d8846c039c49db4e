"""Goals: created with their root session in the transaction that accepts the paid
compute call, read by their creator only (anyone else gets 404) with their progress, and
their cases done check."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from msgspec import UNSET, to_builtins

from tollway import AcceptedJob, Refusal, storage, to_micro, usdc

from . import progress
from .ids import goal_id_for, iso, new_id, next_seq, now_ms
from .settings import CASES_ENABLED_FOR
from .tables import Case, Goal, Session, Step
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
    await Goal.insert(
        Goal(
            id=goal_id,
            agent_id=job.agent_id,
            request_id=job.request_id,
            receipt_id=job.receipt_id,
            goal=value.goal,
            status="running",
            budget=job.price,
            spent=0,
            held=0,
            cases_enabled=cases,
            max_depth=3 if limits in (None, UNSET) else limits.max_depth,
            max_awake=20 if limits in (None, UNSET) else limits.max_awake,
            done_check=storage.dumps(to_builtins(done)) if done not in (None, UNSET) else None,
            result_webhook_url=url if url not in (None, UNSET) else None,
            webhook_secret=_new_secret(),
            created_ms=now,
            updated_ms=now,
            seq=next_seq(),
            ended_ms=None,
            returned=None,
        )
    )
    session_id = await new_session(goal_id, None, None, 0, now)
    await add_message(session_id, "goal", value.goal)
    return goal_id


async def new_session(
    goal_id: str,
    case_id: str | None,
    parent_session_id: str | None,
    depth: int,
    now: int,
    session_id: str | None = None,
) -> str:
    """A session (pending, one wake in its inbox, never run) of the goal's root or of a case; its id."""
    session_id = session_id or new_id("ses")
    await Session.insert(
        Session(
            id=session_id,
            goal_id=goal_id,
            case_id=case_id,
            parent_session_id=parent_session_id,
            depth=depth,
            status="pending",
            inbox=1,
            lease_owner=None,
            lease_until_ms=0,
            attempt=0,
            steps=0,
            created_ms=now,
            updated_ms=now,
        )
    )
    return session_id


async def add_step(
    session_id: str,
    kind: str,
    body: Any,
    *,
    cost: int = 0,
    step_id: str | None = None,
    seq: int | None = None,
    at: int | None = None,
) -> None:
    """One stored step of a session: `body` as JSON (secrets already masked by the caller)."""
    await Step.insert(
        Step(
            id=step_id or new_id("stp"),
            session_id=session_id,
            seq=next_seq() if seq is None else seq,
            kind=kind,
            body=storage.dumps(body),
            cost=cost,
            created_ms=now_ms() if at is None else at,
        )
    )


def _new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


async def add_message(session_id: str, source: str, text: str, extra: Mapping[str, Any] | None = None) -> None:
    """A message the session takes in on its next run (the goal, an event's task, a reply)."""
    await add_step(session_id, "message", {"source": source, "text": text, **(extra or {})})


async def goal_row(goal_id: str) -> dict[str, Any] | None:
    return await Goal.select().where(Goal.id == goal_id).first()


async def owned(goal_id: str, agent_id: str, *, lock: bool = False) -> dict[str, Any]:
    """The goal, when `agent_id` created it; 404 otherwise (whether or not it exists)."""
    query = Goal.select().where(Goal.id == goal_id, Goal.agent_id == agent_id)
    goal = await (storage.lock_rows(query) if lock else query).first()
    if goal is None:
        raise Refusal("not_found", "No such goal for this agent.", status=404)
    return goal


def finished_states(goal: Mapping[str, Any]) -> set[str]:
    """States that end a case: done and failed, and those the goal's done check names."""
    check = storage.loads(goal["done_check"]) or {}
    return {"done", "failed", *check.get("finished_states", [])}


async def done_check_state(goal: Mapping[str, Any]) -> DoneCheckState | None:
    """The done check as given, each field shown (a default when left out), and whether it is
    met now (with no cases it is not)."""
    check = storage.loads(goal["done_check"])
    if check is None:
        return None
    cases = await Case.select(Case.state, Case.owner).where(Case.goal_id == goal["id"])
    finished = list(check["finished_states"])
    owner_needed = list(check.get("owner_required_for") or [])
    min_cases = int(check.get("min_cases", 1))

    def counts(case: Mapping[str, Any]) -> bool:
        return case["state"] in finished and (case["state"] not in owner_needed or bool((case["owner"] or "").strip()))

    met = len(cases) >= min_cases and len(cases) > 0 and all(counts(c) for c in cases)
    return DoneCheckState(
        kind=check.get("kind", "cases"),
        finished_states=finished,
        owner_required_for=owner_needed,
        min_cases=min_cases,
        met=met,
        cases=len(cases),
        finished=sum(1 for c in cases if counts(c)),
    )


async def goal_state(goal: Mapping[str, Any]) -> GoalState:
    ended, returned = goal["ended_ms"], goal["returned"]
    return GoalState(
        goal_id=goal["id"],
        status=goal["status"],
        goal=goal["goal"],
        budget_usdc=usdc(int(goal["budget"])),
        spent_usdc=usdc(int(goal["spent"])),
        held_usdc=usdc(int(goal["held"])),
        returned_usdc=usdc(int(returned)) if returned is not None else None,
        cases_enabled=bool(goal["cases_enabled"]),
        done_check=await done_check_state(goal),
        progress=await progress.of_goal(goal),
        created_at=iso(int(goal["created_ms"])),
        updated_at=iso(int(goal["updated_ms"])),
        ended_at=iso(int(ended)) if ended is not None else None,
    )
