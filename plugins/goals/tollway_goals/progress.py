"""A goal's progress as its read shows it: model turns and tool calls taken, its sessions by
status, the newest action (which case, what), and when anything last happened."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from piccolo.query.functions.aggregate import Count, Max

from tollway import storage

from .ids import iso
from .tables import Session, Step
from .wire import GoalProgress, LastAction

SUMMARY_CHARS = 200
# the newest model turn or tool call with its case's key: a join over three tables the ORM (no foreign keys) cannot express
NEWEST = storage.statement(
    "SELECT s.kind, s.body, s.created_ms, c.case_key FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id "
    "LEFT JOIN goals_cases c ON c.id = x.case_id WHERE x.goal_id = {} AND s.kind IN ('llm', 'tool') ORDER BY s.seq DESC LIMIT 1"
)


async def of_goal(goal: Mapping[str, Any]) -> GoalProgress:
    goal_id = goal["id"]
    kinds = (
        await Step.select(Step.kind, Count(alias="n"), Max(Step.created_ms, alias="at"))
        .where(
            Step.session_id.is_in(Session.select(Session.id).where(Session.goal_id == goal_id)),
        )
        .group_by(Step.kind)
    )
    by_kind = {r["kind"]: int(r["n"]) for r in kinds}
    states = (
        await Session.select(Session.status, Count(alias="n"), Max(Session.updated_ms, alias="at"))
        .where(
            Session.goal_id == goal_id,
        )
        .group_by(Session.status)
    )
    newest = await NEWEST.row(goal_id)
    times = [int(goal["updated_ms"]), *(int(r["at"]) for r in (*kinds, *states) if r["at"] is not None)]
    return GoalProgress(
        model_steps=by_kind.get("llm", 0),
        tool_calls=by_kind.get("tool", 0),
        sessions={r["status"]: int(r["n"]) for r in states},
        last_action=_action(newest) if newest is not None else None,
        last_activity_at=iso(max(times)),
    )


def _action(step: Mapping[str, Any]) -> LastAction:
    body = storage.loads(step["body"]) or {}
    at, key = iso(int(step["created_ms"])), step["case_key"]
    if step["kind"] == "tool":
        try:
            result = json.loads(body.get("content") or "{}")
        except ValueError:
            result = {}
        error = result.get("error") if isinstance(result, dict) else None
        summary = f"error: {error}" if error else "ok"
        return LastAction(at=at, case_key=key, kind="tool", name=body.get("name"), summary=_short(summary))
    names = [c.get("function", {}).get("name", "?") for c in body.get("tool_calls") or ()]
    text = body.get("content") or ""
    summary = text if text else f"called {', '.join(names)}"
    return LastAction(at=at, case_key=key, kind="model", name=", ".join(names) or None, summary=_short(summary))


def _short(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
