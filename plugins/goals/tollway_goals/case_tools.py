"""The tools the agent loop gives the model besides the service's own: change the case's
record, write a decision, open a case under this one, finish. Each runs in the transaction
that stores its result, so a resumed session never applies one twice."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from typing import Any

from tollway import storage, to_micro

from . import budget
from .cases import open_case
from .ending import end as end_goal
from .ids import new_id, now_ms
from .tables import Case, Decision

_TOKEN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
PLATFORM_STATES = ("open", "reopened", "needs_a_person")
ENDING_STATES = ("done", "failed")


@dataclasses.dataclass(frozen=True)
class Where:
    """The session a tool call comes from."""

    goal: dict[str, Any]
    session_id: str
    case_id: str | None
    depth: int


class CallRefused(Exception):
    """A tool call the loop answers with an error the model can read (nothing changed)."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    result: dict[str, Any]
    ends_session: bool = False


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_STR = {"type": "string"}
UPDATE_CASE = _fn(
    "update_case",
    "Change this case's record: state (a lowercase token; done or failed ends the case), owner, next_action, "
    "due_date (YYYY-MM-DD), add_evidence (workspace keys to add).",
    {
        "state": _STR,
        "owner": _STR,
        "next_action": _STR,
        "due_date": _STR,
        "add_evidence": {"type": "array", "items": _STR},
    },
    [],
)
RECORD_DECISION = _fn(
    "record_decision",
    "Write a decision on this case's record, with the reason.",
    {"decision": _STR, "reason": _STR},
    ["decision"],
)
OPEN_CASE = _fn(
    "open_case",
    "Open a case under this one, with its own session (a sub-agent): a key unique in the goal, its task, and "
    "optionally a budget slice in USDC and a step limit.",
    {"case_key": _STR, "task": _STR, "budget_usdc": _STR, "step_limit": {"type": "integer", "minimum": 1}},
    ["case_key", "task"],
)
FINISH = _fn(
    "finish",
    "End this session's work: summary says what was done. A case still open is marked done.",
    {"summary": _STR},
    ["summary"],
)


def definitions(where: Where) -> list[dict[str, Any]]:
    tools = [RECORD_DECISION, FINISH]
    if where.case_id is not None:
        tools.insert(0, UPDATE_CASE)
    if where.goal["cases_enabled"] and where.depth < int(where.goal["max_depth"]):
        tools.append(OPEN_CASE)
    return tools


async def update_case(where: Where, args: dict[str, Any]) -> Outcome:
    if where.case_id is None:
        raise CallRefused("update_case is for a case's session; the root has no case record")
    unknown = set(args) - {"state", "owner", "next_action", "due_date", "add_evidence"}
    if unknown:
        raise CallRefused(f"unknown fields: {', '.join(sorted(unknown))}")
    case = await storage.lock_rows(Case.select().where(Case.id == where.case_id)).first()
    assert case is not None
    state = args.get("state", case["state"])
    if not isinstance(state, str) or not _TOKEN.match(state):
        raise CallRefused("state must be a lowercase token (letters, digits, underscores)")
    if state in PLATFORM_STATES and state != case["state"]:
        raise CallRefused(f"{state} is written by the platform, not by the agent")
    due = args.get("due_date", case["due_date"])
    if due is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(due)):
        raise CallRefused("due_date must be YYYY-MM-DD")
    evidence = storage.loads(case["evidence"]) or []
    for key in args.get("add_evidence") or []:
        if isinstance(key, str) and key and key not in evidence:
            evidence.append(key[:200])
    now = now_ms()
    ends = state in ENDING_STATES or state in _finished(where.goal)
    await Case.update(
        {
            Case.state: state,
            Case.owner: _text(args.get("owner", case["owner"])),
            Case.next_action: _text(args.get("next_action", case["next_action"])),
            Case.due_date: due,
            Case.evidence: storage.dumps(evidence[:100]),
            Case.updated_ms: now,
            Case.ended_ms: now if ends else None,
        }
    ).where(Case.id == where.case_id)
    if ends:
        await budget.release_slice(where.goal["id"], where.case_id)
    return Outcome({"ok": True, "state": state, "ended": ends}, ends_session=ends)


def _finished(goal: dict[str, Any]) -> set[str]:
    check = storage.loads(goal["done_check"]) or {}
    return set(check.get("finished_states") or ())


def _text(value: Any) -> str | None:
    return None if value is None else str(value)[:2000]


async def record_decision(where: Where, args: dict[str, Any]) -> Outcome:
    decision = args.get("decision")
    if not isinstance(decision, str) or not decision.strip():
        raise CallRefused("decision is required")
    if where.case_id is None:
        raise CallRefused("decisions are written on a case's record; the root has none")
    await Decision.insert(
        Decision(
            id=new_id("dec"),
            case_id=where.case_id,
            decision=decision[:4000],
            reason=_text(args.get("reason")),
            created_ms=now_ms(),
        ),
    )
    return Outcome({"ok": True})


async def open_sub_case(where: Where, args: dict[str, Any]) -> Outcome:
    if not where.goal["cases_enabled"]:
        raise CallRefused("this goal works without cases")
    if where.depth + 1 > int(where.goal["max_depth"]):
        raise CallRefused(f"agent_limits.max_depth is {where.goal['max_depth']}: no case may be opened this deep")
    key, task = args.get("case_key"), args.get("task")
    if (
        not isinstance(key, str)
        or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}", key)
        or not isinstance(task, str)
        or not task.strip()
    ):
        raise CallRefused("case_key (letters, digits, . _ : -) and task are required")
    if await Case.exists().where(Case.goal_id == where.goal["id"], Case.case_key == key):
        raise CallRefused(f"a case {key!r} exists already")
    slice_ = None
    if args.get("budget_usdc") is not None:
        try:
            slice_ = to_micro(str(args["budget_usdc"]))
        except Exception as exc:
            raise CallRefused(f"budget_usdc is not a USDC amount ({exc})") from exc
        if not await budget.hold_slice(where.goal["id"], slice_):
            raise CallRefused("the goal has not that much budget left")
    step_limit = args.get("step_limit")
    if step_limit is not None and (not isinstance(step_limit, int) or step_limit < 1):
        raise CallRefused("step_limit must be a positive integer")
    await open_case(
        where.goal,
        key,
        task,
        slice_,
        step_limit,
        parent=where.case_id,
        depth=where.depth + 1,
        source="parent",
        parent_session=where.session_id,
    )
    return Outcome({"ok": True, "case_key": key})


async def finish(where: Where, args: dict[str, Any], platform: Any = None) -> Outcome:
    """A case's session: the case is done (when still open). The root's: the goal is
    completed and what its budget has left returns to the creator's credits."""
    now = now_ms()
    if where.case_id is not None:
        case = await Case.select(Case.state).where(Case.id == where.case_id).first()
        if case is not None and case["state"] in ("open", "reopened"):
            await Case.update({Case.state: "done", Case.ended_ms: now, Case.updated_ms: now}).where(
                Case.id == where.case_id
            )
            await budget.release_slice(where.goal["id"], where.case_id)
    else:
        await end_goal(where.goal["id"], "completed", platform)
    return Outcome({"ok": True, "summary": str(args.get("summary", ""))[:4000]}, ends_session=True)


EXECUTORS: dict[str, Callable[[Where, dict[str, Any]], Awaitable[Outcome]]] = {
    "update_case": update_case,
    "record_decision": record_decision,
    "open_case": open_sub_case,
    "finish": finish,
}
