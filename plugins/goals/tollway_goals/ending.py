"""How a goal ends (completed by its root, cancelled by its creator, expired when idle): its
sessions stop at their next step, its open questions to people are withdrawn, and once no
step is in flight what its budget has left goes back to the creator, exactly once, and the
result webhook is told."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tollway import Refusal, storage, usdc

from . import budget
from .ids import now_ms
from .settings import FAMILY, IDLE_TIMEOUT_S
from .tables import Ask, Goal, Session, Step

OPEN_ASKS = ("sending", "sent", "chased")
# the holds of a goal's sessions that no live run holds: a join the tables (no foreign keys) cannot express
DEAD_HOLDS = storage.statement(
    "SELECT s.id, s.body, x.id AS session_id, x.case_id FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id "
    "WHERE x.goal_id = {} AND s.kind = 'hold' AND (x.status <> 'running' OR x.lease_until_ms < {})"
)


async def end(goal_id: str, status: str, platform: Any) -> int:
    """End a running goal with `status`, in the caller's transaction: no session runs again
    (one running now stops before its next step) and the unspent budget is returned when
    nothing is in flight (else when the last step in flight is settled). What was returned
    now (0: the goal had ended already, or steps are still in flight)."""
    goal = await storage.lock_rows(Goal.select(Goal.status).where(Goal.id == goal_id)).first()
    if goal is None or goal["status"] != "running":
        return 0
    now = now_ms()
    await Goal.update({Goal.status: status, Goal.ended_ms: now, Goal.updated_ms: now}).where(Goal.id == goal_id)
    await Session.update({Session.status: "cancelled", Session.updated_ms: now}).where(
        Session.goal_id == goal_id,
        Session.status.is_in(["pending", "waiting", "failed"]),
    )
    await Ask.update({Ask.status: "withdrawn", Ask.next_chase_ms: None, Ask.updated_ms: now}).where(
        Ask.goal_id == goal_id,
        Ask.status.is_in(list(OPEN_ASKS)),
    )
    return await settle(goal_id, platform) or 0


async def settle(goal_id: str, platform: Any) -> int | None:
    """An ended goal with no step in flight: what its budget has left goes back to the
    creator's credits against the compute receipt, once, and the result webhook hears of the
    end. The amount returned; None when the goal runs, was settled already or a step is in
    flight. In the caller's transaction (the goal's row locked)."""
    goal = await storage.lock_rows(Goal.select().where(Goal.id == goal_id)).first()
    if goal is None or goal["status"] == "running" or goal["returned"] is not None or goal["ended_ms"] is None:
        return None  # (no ended_ms: a goal that ended before returns were settled by hold, returned then)
    if await Step.exists().where(
        Step.kind == "hold", Step.session_id.is_in(Session.select(Session.id).where(Session.goal_id == goal_id))
    ):
        return None
    remainder = max(int(goal["budget"]) - int(goal["spent"]), 0)
    await Goal.update({Goal.returned: remainder, Goal.held: 0, Goal.updated_ms: now_ms()}).where(Goal.id == goal_id)
    if remainder > 0:
        await platform.return_unspent(
            goal["receipt_id"], remainder, reason=f"goal {goal_id} {goal['status']}: unspent budget"
        )
    if goal["result_webhook_url"]:
        await platform.enqueue_webhook(
            webhook_id=f"end_{goal_id}",
            kind="goal_ended",
            subject=goal_id,
            url=goal["result_webhook_url"],
            secret=goal["webhook_secret"],
            body={
                "event": "goal.ended",
                "goal_id": goal_id,
                "status": goal["status"],
                "budget_usdc": usdc(int(goal["budget"])),
                "spent_usdc": usdc(int(goal["spent"])),
                "returned_usdc": usdc(remainder),
            },
        )
    return remainder


async def cancel(goal: Mapping[str, Any], platform: Any) -> None:
    """The creator's cancel, in the caller's transaction (the goal's row locked): a running
    goal ends `cancelled`; a cancelled one stays so (the same answer again); a goal that
    ended otherwise is refused with 409 goal_ended."""
    if goal["status"] == "running":
        await end(goal["id"], "cancelled", platform)
    elif goal["status"] != "cancelled":
        raise ended_refusal(goal)


def ended_refusal(goal: Mapping[str, Any]) -> Refusal:
    return Refusal(
        "goal_ended",
        f"Goal {goal['id']} has ended ({goal['status']}): it takes no more events and cannot be cancelled.",
        status=409,
        details={"status": goal["status"]},
    )


def idle_timeout_ms(platform: Any) -> int:
    raw = platform.settings(FAMILY).get(IDLE_TIMEOUT_S.name) if platform is not None else None
    return int(float(raw or IDLE_TIMEOUT_S.default or "86400") * 1000)


async def sweep(platform: Any) -> None:
    """The periodic pass: a running goal idle for the idle time (no session pending or
    running, no question to a person open, no session touched since) ends `expired`; an
    ended goal whose steps in flight were left by runs that died gets those holds back and
    is settled."""
    now = now_ms()
    cutoff = now - idle_timeout_ms(platform)
    idle = (
        await Goal.select(Goal.id)
        .where(
            Goal.status == "running",
            Goal.created_ms < cutoff,
            Goal.id.not_in(
                Session.select(Session.goal_id).where(
                    Session.status.is_in(["pending", "running"]) | (Session.updated_ms >= cutoff)
                )
            ),
            Goal.id.not_in(Ask.select(Ask.goal_id).where(Ask.status.is_in(list(OPEN_ASKS)))),
        )
        .limit(100)
    )
    for goal in idle:
        async with storage.transaction():
            await end(goal["id"], "expired", platform)
    unsettled = (
        await Goal.select(Goal.id)
        .where(Goal.status != "running", Goal.returned.is_null(), Goal.ended_ms.is_not_null())
        .limit(100)
    )
    for goal in unsettled:
        async with storage.transaction():
            await budget.lock_goal(goal["id"])  # the goal before its sessions and cases, as ending it locks them
            await _give_back_dead_holds(goal["id"], now)
            await settle(goal["id"], platform)
    if idle or unsettled:
        await platform.webhooks_due()


async def _give_back_dead_holds(goal_id: str, now: int) -> None:
    """Holds of an ended goal's sessions that no live run holds (its lease ran out): given back."""
    for hold in await DEAD_HOLDS.rows(goal_id, now):
        await Session.update({Session.status: "cancelled", Session.updated_ms: now}).where(
            Session.id == hold["session_id"],
            Session.status == "running",
        )
        await budget.settle_hold(goal_id, hold["case_id"], hold["id"], int(storage.loads(hold["body"])["amount"]), 0)
