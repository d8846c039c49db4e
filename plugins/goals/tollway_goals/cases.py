"""Cases and events: an event opens, wakes or reopens the case its `case_key` names (or goes
to the goal's root), once per `event_id`, while the goal runs; cases are listed oldest opened
first with counts over all of them, and read whole with their decisions, asks and deliveries
(each delivery with every attempt of its webhook)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from msgspec import UNSET
from piccolo.query.functions.aggregate import Count

from tollway import Refusal, storage, to_micro, usdc

from . import budget
from .ending import ended_refusal
from .goals import add_message, finished_states, new_session
from .ids import iso, new_id, now_ms, ordered_id
from .tables import Ask as AskRow
from .tables import Case as CaseRow
from .tables import Decision as DecisionRow
from .tables import Delivery as DeliveryRow
from .tables import Event, Session
from .wire import Ask, Case, CaseRecord, Decision, Delivery, DeliveryAttempt, EventAnswer, EventRequest

# one statement, so that a run ending its session and this wake never lose one another (the ORM has no CASE)
WAKE = storage.statement(
    "UPDATE goals_sessions SET inbox = inbox + 1, status = CASE WHEN status IN ('waiting', 'completed', 'failed') THEN 'pending' "
    "ELSE status END, updated_ms = {} WHERE id = {}"
)

_TOKEN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_LIMIT = 200
DEFAULT_LIMIT = 50


def amount_of(value: Any, field: str) -> int:
    try:
        return to_micro(value)
    except Exception as exc:  # AmountError: a malformed amount
        raise Refusal(
            "invalid_request", f"{field} is not a USDC amount.", details=[{"field": field, "message": str(exc)}]
        ) from exc


async def wake(session_id: str) -> None:
    """One more thing for the session to take in; a waiting or finished session runs again."""
    await WAKE.execute(now_ms(), session_id)


async def root_session(goal_id: str) -> str:
    found = await Session.select(Session.id).where(Session.goal_id == goal_id, Session.case_id.is_null()).first()
    assert found is not None, goal_id
    return found["id"]


async def post_event(goal: Mapping[str, Any], event: EventRequest) -> EventAnswer:
    """Apply one event in the caller's transaction (the goal row is locked): the same
    `event_id` again answers what the first one did and changes nothing (even once the goal
    ended); a new event to an ended goal is refused with 409 goal_ended."""
    goal_id = goal["id"]
    if goal["status"] != "running":
        seen = await _seen(goal_id, event.event_id)
        if seen is None:
            raise ended_refusal(goal)
        return seen
    claimed = (
        await Event.insert(
            Event(
                id=new_id("evt"),
                goal_id=goal_id,
                event_id=event.event_id,
                target="root",
                case_key=None,
                outcome="pending",
                created_ms=now_ms(),
            ),
        )
        .on_conflict(target=(Event.goal_id, Event.event_id), action="DO NOTHING")
        .returning(Event.id)
    )
    if not claimed:
        seen = await _seen(goal_id, event.event_id)
        assert seen is not None
        return seen
    if event.case_key is UNSET or not goal["cases_enabled"]:
        await add_message(await root_session(goal_id), "event", event.task, {"event_id": event.event_id})
        await wake(await root_session(goal_id))
        answer = EventAnswer(target="root", case_key=None, outcome="sent_to_root")
    else:
        answer = await _to_case(goal, event)
    await Event.update(
        {Event.target: answer.target, Event.case_key: answer.case_key, Event.outcome: answer.outcome}
    ).where(
        Event.id == claimed[0]["id"],
    )
    return answer


async def _seen(goal_id: str, event_id: str) -> EventAnswer | None:
    seen = (
        await Event.select(Event.target, Event.case_key, Event.outcome)
        .where(Event.goal_id == goal_id, Event.event_id == event_id)
        .first()
    )
    return (
        None if seen is None else EventAnswer(target=seen["target"], case_key=seen["case_key"], outcome=seen["outcome"])
    )


async def _to_case(goal: Mapping[str, Any], event: EventRequest) -> EventAnswer:
    goal_id, key = goal["id"], str(event.case_key)
    slice_ = amount_of(event.budget_usdc, "budget_usdc") if event.budget_usdc is not UNSET else None
    if slice_ is not None and not await budget.hold_slice(goal_id, slice_):
        left = int(goal["budget"]) - int(goal["spent"]) - int(goal["held"])
        raise Refusal(
            "insufficient_budget",
            f"The goal has {usdc(left)} USDC of its budget left; budget_usdc asks for {usdc(slice_)}.",
            status=409,
            details=[{"field": "budget_usdc", "message": "more than the goal has left"}],
        )
    step_limit = event.step_limit if event.step_limit is not UNSET else None
    case = await storage.lock_rows(CaseRow.select().where(CaseRow.goal_id == goal_id, CaseRow.case_key == key)).first()
    if case is None:
        await open_case(
            goal, key, event.task, slice_, step_limit, parent=None, depth=1, source="event", event_id=event.event_id
        )
        return EventAnswer(target="case", case_key=key, outcome="created")
    now = now_ms()
    outcome = "reopened" if case["state"] in finished_states(goal) else "already_open"
    state = "reopened" if outcome == "reopened" else case["state"]
    if state == "needs_a_person" and (slice_ or step_limit):
        state = "open"  # more budget or steps: the case may spend again
    ended = None if outcome == "reopened" else case["ended_ms"]
    new_budget = case["budget"] if slice_ is None else int(case["budget"] or 0) + slice_
    shown_slice = case["slice_given"] if slice_ is None else slice_
    new_limit = case["step_limit"] if step_limit is None else step_limit
    # the case keeps the task it was opened with; this event's task goes to its session
    await CaseRow.update(
        {
            CaseRow.state: state,
            CaseRow.ended_ms: ended,
            CaseRow.budget: new_budget,
            CaseRow.slice_given: shown_slice,
            CaseRow.step_limit: new_limit,
            CaseRow.updated_ms: now,
        }
    ).where(CaseRow.id == case["id"])
    await add_message(case["session_id"], "event", event.task, {"event_id": event.event_id, "outcome": outcome})
    await wake(case["session_id"])
    return EventAnswer(target="case", case_key=key, outcome=outcome)


async def open_case(
    goal: Mapping[str, Any],
    key: str,
    task: str,
    slice_: int | None,
    step_limit: int | None,
    *,
    parent: str | None,
    depth: int,
    source: str,
    event_id: str | None = None,
    parent_session: str | None = None,
) -> str:
    """A new case (state open) and its session (pending, its task as first message)."""
    now = now_ms()
    case_id, session_id = ordered_id("case"), new_id("ses")
    await CaseRow.insert(
        CaseRow(
            id=case_id,
            goal_id=goal["id"],
            case_key=key,
            state="open",
            owner=None,
            next_action=None,
            due_date=None,
            evidence="[]",
            task=task,
            session_id=session_id,
            parent_id=parent,
            depth=depth,
            budget=slice_,
            slice_given=slice_,
            held=0,
            spent=0,
            step_limit=step_limit,
            steps=0,
            opened_ms=now,
            updated_ms=now,
            ended_ms=None,
        )
    )
    await new_session(goal["id"], case_id, parent_session, depth, now, session_id)
    await add_message(session_id, source, task, {"event_id": event_id} if event_id else None)
    return case_id


def parse_listing(query: Mapping[str, str]) -> tuple[list[str] | None, int, int]:
    """(states, limit, offset) of a cases listing; every bad parameter named in one 400."""
    problems: list[dict[str, str]] = []
    states = None
    raw = query.get("state")
    if raw is not None and raw.strip():
        states = [s.strip() for s in raw.split(",")]
        bad = [s for s in states if not _TOKEN.match(s)]
        if bad:
            problems.append(
                {"field": "state", "message": f"not lowercase state tokens: {', '.join(repr(b) for b in bad[:5])}"}
            )
    limit = _int(query.get("limit"), DEFAULT_LIMIT, 1, MAX_LIMIT, "limit", problems)
    offset = _int(query.get("offset"), 0, 0, 10**9, "offset", problems)
    if problems:
        raise Refusal("invalid_request", f"Invalid {', '.join(p['field'] for p in problems)}.", details=problems)
    return states, limit, offset


def _int(raw: str | None, default: int, low: int, high: int, field: str, problems: list[dict[str, str]]) -> int:
    if raw is None or raw == "":
        return default
    if not re.fullmatch(r"-?[0-9]{1,12}", raw.strip()) or not low <= int(raw) <= high:
        problems.append({"field": field, "message": f"must be an integer from {low} to {high}"})
        return default
    return int(raw)


async def list_cases(
    goal_id: str, states: list[str] | None, limit: int, offset: int
) -> tuple[list[Case], int, dict[str, int]]:
    where = [CaseRow.goal_id == goal_id, *([CaseRow.state.is_in(states)] if states else [])]
    total = await CaseRow.count().where(*where)
    found = await CaseRow.select().where(*where).order_by(CaseRow.opened_ms, CaseRow.id).limit(limit).offset(offset)
    counts = (
        await CaseRow.select(CaseRow.state, Count(alias="n")).where(CaseRow.goal_id == goal_id).group_by(CaseRow.state)
    )
    return (
        [case_resource(r) for r in await _with_session_status(found)],
        int(total),
        {r["state"]: int(r["n"]) for r in counts},
    )


async def _with_session_status(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case row with `session_status`, its session's status (None when it has none)."""
    ids = list({c["session_id"] for c in cases if c["session_id"] is not None})
    found = await Session.select(Session.id, Session.status).where(Session.id.is_in(ids)) if ids else []
    status = {s["id"]: s["status"] for s in found}
    return [{**c, "session_status": status.get(c["session_id"])} for c in cases]


def case_resource(row: Mapping[str, Any], now: int | None = None) -> Case:
    now = now_ms() if now is None else now
    ended = row["ended_ms"]
    given = row["slice_given"] if row["slice_given"] is not None else row["budget"]
    return Case(
        key=row["case_key"],
        state=row["state"],
        owner=row["owner"],
        next_action=row["next_action"],
        due_date=row["due_date"],
        evidence=storage.loads(row["evidence"]) or [],
        status=row.get("session_status") or "pending",
        task=row["task"],
        session_id=row["session_id"],
        parent_id=row["parent_id"],
        depth=int(row["depth"]),
        budget_usdc=usdc(int(given)) if given is not None else None,
        held_usdc=usdc(int(row["held"])),
        step_limit=int(row["step_limit"]) if row["step_limit"] is not None else None,
        opened_at=iso(int(row["opened_ms"])),
        updated_at=iso(int(row["updated_ms"])),
        ended_at=iso(int(ended)) if ended is not None else None,
        age_seconds=max(0, ((int(ended) if ended is not None else now) - int(row["opened_ms"])) // 1000),
    )


async def case_record(goal_id: str, key: str, platform: Any) -> CaseRecord:
    found = await CaseRow.select().where(CaseRow.goal_id == goal_id, CaseRow.case_key == key).first()
    if found is None:
        raise Refusal("not_found", "No such case in this goal.", status=404)
    [row] = await _with_session_status([found])
    case = case_resource(row)
    decisions, asks, deliveries = [
        await table.select().where(table.case_id == row["id"]).order_by(table.created_ms, table.id)
        for table in (DecisionRow, AskRow, DeliveryRow)
    ]
    return CaseRecord(
        **{f: getattr(case, f) for f in case.__struct_fields__},
        decisions=[
            Decision(id=d["id"], decision=d["decision"], reason=d["reason"], at=iso(int(d["created_ms"])))
            for d in decisions
        ],
        asks=[_ask(a) for a in asks],
        deliveries=[await _delivery(d, platform) for d in deliveries],
    )


def _ask(a: Mapping[str, Any]) -> Ask:
    return Ask(
        id=a["id"],
        kind=a["kind"],
        status=a["status"],
        person_name=a["person_name"],
        person_address=a["person_address"],
        question=a["question"],
        chases=int(a["chases"]),
        deadline_at=iso(int(a["deadline_ms"])),
        escalated_at=iso(int(a["escalated_ms"])) if a["escalated_ms"] is not None else None,
        answer=storage.loads(a["answer"]),
        created_at=iso(int(a["created_ms"])),
    )


async def _delivery(d: Mapping[str, Any], platform: Any) -> Delivery:
    """A result delivery with its webhook's state and every attempt (when, HTTP status, error)."""
    status, attempts, last_error, next_at = d["status"], [], d["reason"], None
    if d["webhook_id"] is not None and platform is not None:
        hook = await platform.webhook(d["webhook_id"])
        if hook is not None:
            status = hook["state"]
            attempts = [_attempt(a) for a in await platform.webhook_attempts(d["webhook_id"])]
            if attempts:
                last_error = attempts[-1].error
            if hook["state"] == "pending":
                next_at = iso(int(hook["next_attempt_ms"]))
    return Delivery(
        id=d["id"],
        status=status,
        attempts=attempts,
        last_error=last_error,
        next_attempt_at=next_at,
        created_at=iso(int(d["created_ms"])),
    )


def _attempt(a: Mapping[str, Any]) -> DeliveryAttempt:
    code = int(a["status_code"]) if a["status_code"] is not None else None
    error = a["error"] or (f"HTTP {code}" if code is not None and not 200 <= code < 300 else None)
    return DeliveryAttempt(
        attempt=int(a["attempt"]),
        at=iso(int(a["started_ms"])),
        status_code=code,
        error=error,
        duration_ms=int(a["duration_ms"]) if a["duration_ms"] is not None else None,
    )
