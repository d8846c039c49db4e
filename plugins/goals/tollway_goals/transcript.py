"""A session's stored steps as a chat transcript: messages taken in (the goal, events,
replies), the model's turns and the tools' results, in step order, except that a message
arriving while the model's tool calls ran is placed after their results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tollway import storage

from .tables import Step


async def steps_of(session_id: str) -> list[dict[str, Any]]:
    return (
        await Step.select(Step.id, Step.seq, Step.kind, Step.body, Step.cost)
        .where(Step.session_id == session_id)
        .order_by(Step.seq, Step.id)
    )


def messages(steps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    waiting_ids: set[str] = set()
    deferred: list[dict[str, Any]] = []
    for step in steps:
        body = storage.loads(step["body"])
        if step["kind"] == "message":
            message = {"role": "user", "content": f"[{body['source']}] {body['text']}"}
            (deferred if waiting_ids else out).append(message)
        elif step["kind"] == "llm":
            out.append(body)
            waiting_ids = {c["id"] for c in body.get("tool_calls") or ()}
        elif step["kind"] == "tool":
            out.append({"role": "tool", "tool_call_id": body["tool_call_id"], "content": body["content"]})
            waiting_ids.discard(body["tool_call_id"])
        if not waiting_ids and deferred:
            out.extend(deferred)
            deferred = []
    return out + deferred


def unanswered_calls(steps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of the model's last turn that have no stored result yet."""
    last_llm = None
    for step in steps:
        if step["kind"] == "llm":
            last_llm = step
    if last_llm is None:
        return []
    calls = storage.loads(last_llm["body"]).get("tool_calls") or []
    answered = {
        storage.loads(s["body"])["tool_call_id"]
        for s in steps
        if s["kind"] == "tool" and int(s["seq"]) > int(last_llm["seq"])
    }
    return [c for c in calls if c["id"] not in answered]


def needs_model(steps: Sequence[dict[str, Any]]) -> bool:
    """Whether the model has something to answer: a message or tool result after its last turn."""
    last_llm_seq = max((int(s["seq"]) for s in steps if s["kind"] == "llm"), default=-1)
    return any(s["kind"] in ("message", "tool") and int(s["seq"]) > last_llm_seq for s in steps)
