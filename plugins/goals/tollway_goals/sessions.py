"""Sessions as leased jobs: a worker claims a `pending` session (or a `running` one whose
lease ran out: its worker died) while its goal has fewer than `max_awake` sessions running,
keeps the lease alive while it runs it, and ends its run `waiting`, `completed` or back to
`pending` (more came in). Every write of a run is fenced by the attempt it claimed."""

from __future__ import annotations

import dataclasses
from typing import Any

from tollway import storage

from .ids import now_ms
from .tables import Goal, Session

RUNNABLE = ("pending", "running")


@dataclasses.dataclass(frozen=True)
class Claim:
    session_id: str
    goal_id: str
    case_id: str | None
    depth: int
    attempt: int
    owner: str


async def claim(owner: str, lease_s: float, limit: int) -> list[Claim]:
    """Up to `limit` sessions for `owner`, oldest first, within each goal's awake cap."""
    now = now_ms()
    candidates = (
        await Session.select(Session.id, Session.goal_id)
        .where(_runnable(now))
        .order_by(
            Session.updated_ms,
            Session.id,
        )
        .limit(max(limit * 4, 8))
    )
    claimed: list[Claim] = []
    for candidate in candidates:
        if len(claimed) >= limit:
            break
        got = await _claim_one(candidate["id"], candidate["goal_id"], owner, lease_s)
        if got is not None:
            claimed.append(got)
    return claimed


def _runnable(now: int) -> Any:
    """Pending, or running on a lease that ran out (its worker died)."""
    return (Session.status == "pending") | ((Session.status == "running") & (Session.lease_until_ms < now))


async def _claim_one(session_id: str, goal_id: str, owner: str, lease_s: float) -> Claim | None:
    now = now_ms()
    async with storage.transaction():
        goal = await storage.lock_rows(Goal.select(Goal.max_awake, Goal.status).where(Goal.id == goal_id)).first()
        if goal is None or goal["status"] != "running":
            return None
        awake = await Session.count().where(
            Session.goal_id == goal_id,
            Session.status == "running",
            Session.lease_until_ms >= now,
            Session.id != session_id,
        )
        if awake >= int(goal["max_awake"]):
            return None
        claimed = (
            await Session.update(
                {
                    Session.status: "running",
                    Session.lease_owner: owner,
                    Session.lease_until_ms: now + int(lease_s * 1000),
                    Session.attempt: Session.attempt + 1,
                    Session.updated_ms: now,
                }
            )
            .where(Session.id == session_id, _runnable(now))
            .returning(Session.id, Session.goal_id, Session.case_id, Session.depth, Session.attempt)
        )
    if not claimed:
        return None
    row = claimed[0]
    return Claim(row["id"], row["goal_id"], row["case_id"], int(row["depth"]), int(row["attempt"]), owner)


async def still_ours(c: Claim, lease_s: float | None = None) -> bool:
    """True while the claim holds the session (and, with `lease_s`, extend the lease)."""
    held = (Session.id == c.session_id, Session.attempt == c.attempt, Session.status == "running")
    if lease_s is None:
        return await Session.exists().where(*held)
    return bool(
        await Session.update({Session.lease_until_ms: now_ms() + int(lease_s * 1000)})
        .where(*held)
        .returning(Session.id)
    )


async def inbox(session_id: str) -> int:
    found = await Session.select(Session.inbox).where(Session.id == session_id).first()
    return int(found["inbox"]) if found else 0


async def end_run(c: Claim, status: str, *, taken: int | None = None) -> bool:
    """End this run with `status` (waiting, completed, failed, cancelled). `waiting` only when
    nothing came in since the inbox read `taken`: else the session stays runnable (pending)."""
    if status == "waiting" and taken is not None:
        if await _release(c, "waiting", Session.inbox == taken):
            return True
        status = "pending"
    return await _release(c, status)


async def _release(c: Claim, status: str, *also: Any) -> bool:
    """The run lets go of its session with `status`, if it still holds it (and `also` holds)."""
    ended = (
        await Session.update(
            {Session.status: status, Session.lease_owner: None, Session.lease_until_ms: 0, Session.updated_ms: now_ms()}
        )
        .where(
            Session.id == c.session_id,
            Session.attempt == c.attempt,
            Session.status == "running",
            *also,
        )
        .returning(Session.id)
    )
    return bool(ended)
