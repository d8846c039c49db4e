"""`deliver_result`: a case's result POSTed to the goal's result webhook through the
service's outbox (signed, up to six attempts, each shown on the case). When the case asked
for an approval, only a result equal (canonical JSON) to what the person approved is sent;
anything else is withheld and recorded."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from tollway import storage

from .approval_links import shown_hash
from .asks import latest_approval
from .case_tools import CallRefused, Outcome, Where
from .ids import now_ms
from .tables import Case, Delivery

DELIVER_RESULT = {
    "type": "function",
    "function": {
        "name": "deliver_result",
        "description": "Send this case's result (an object) to the goal's result webhook. If you asked for an approval, send "
        "exactly what was approved: anything else is withheld.",
        "parameters": {
            "type": "object",
            "properties": {"result": {"type": "object"}},
            "required": ["result"],
            "additionalProperties": False,
        },
    },
}


async def deliver_result(where: Where, args: Mapping[str, Any], platform: Any) -> Outcome:
    """Record the delivery (and queue its webhook) in the caller's transaction."""
    if where.case_id is None:
        raise CallRefused("deliver_result is for a case's session: the webhook names the case")
    goal = where.goal
    if not goal["result_webhook_url"]:
        raise CallRefused("the goal has no result_webhook_url")
    result = args.get("result")
    if not isinstance(result, dict):
        raise CallRefused("result must be an object")
    case = await Case.select(Case.case_key).where(Case.id == where.case_id).first()
    assert case is not None
    ask = await latest_approval(where.case_id)
    approval, reason = None, None
    if ask is not None:
        if ask["status"] != "approved":
            reason = f"the approval asked ({ask['id']}) has not been given"
        elif ask["shown_hash"] != shown_hash(result):
            reason = f"the result differs from what was approved in ask {ask['id']}"
        else:
            answer = storage.loads(ask["answer"])
            approval = {"ask_id": ask["id"], "who": answer["who"], "when": answer["when"], "via": answer["via"]}
    delivery_id = f"dlv_{secrets.token_hex(12)}"
    status = "withheld" if reason else "pending"
    await Delivery.insert(
        Delivery(
            id=delivery_id,
            case_id=where.case_id,
            goal_id=goal["id"],
            webhook_id=None if reason else delivery_id,
            status=status,
            reason=reason,
            result=storage.dumps(result),
            created_ms=now_ms(),
        )
    )
    if reason is None:
        await platform.enqueue_webhook(
            webhook_id=delivery_id,
            kind="case_result",
            subject=goal["id"],
            url=goal["result_webhook_url"],
            secret=goal["webhook_secret"],
            body={
                "event": "case.result",
                "goal_id": goal["id"],
                "case": case["case_key"],
                "result": result,
                "approval": approval,
                "delivery_id": delivery_id,
            },
        )
        return Outcome({"ok": True, "delivery_id": delivery_id, "status": "pending"})
    return Outcome({"ok": False, "delivery_id": delivery_id, "status": "withheld", "reason": reason})
