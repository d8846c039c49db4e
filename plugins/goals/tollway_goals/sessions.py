"""Sessions as leased jobs: a worker claims a `pending` session (or a `running` one whose
lease ran out: its worker died) while its goal has fewer than `max_awake` sessions running,
keeps the lease alive while it runs it, and ends its run `waiting`, `completed` or back to
`pending` (more came in). Every write of a run is fenced by the attempt it claimed."""
from __future__ import annotations

import dataclasses
from typing import Any

from . import db
from .ids import now_ms

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
    candidates = await db.rows(
        "SELECT id, goal_id FROM goals_sessions WHERE status = 'pending' OR (status = 'running' AND lease_until_ms < {}) "
        "ORDER BY updated_ms, id LIMIT {}",
        now, max(limit * 4, 8),
    )
    claimed: list[Claim] = []
    for candidate in candidates:
        if len(claimed) >= limit:
            break
        got = await _claim_one(candidate["id"], candidate["goal_id"], owner, lease_s)
        if got is not None:
            claimed.append(got)
    return claimed


async def _claim_one(session_id: str, goal_id: str, owner: str, lease_s: float) -> Claim | None:
    now = now_ms()
    async with db.transaction():
        goal = await db.row("SELECT max_awake, status FROM goals_goals WHERE id = {}" + db.for_update(), goal_id)
        if goal is None or goal["status"] != "running":
            return None
        awake = await db.row(
            "SELECT COUNT(*) AS n FROM goals_sessions WHERE goal_id = {} AND status = 'running' AND lease_until_ms >= {} AND id <> {}",
            goal_id, now, session_id,
        )
        if awake is not None and int(awake["n"]) >= int(goal["max_awake"]):
            return None
        row = await db.row(
            "UPDATE goals_sessions SET status = 'running', lease_owner = {}, lease_until_ms = {}, attempt = attempt + 1, updated_ms = {} "
            "WHERE id = {} AND (status = 'pending' OR (status = 'running' AND lease_until_ms < {})) "
            "RETURNING id, goal_id, case_id, depth, attempt",
            owner, now + int(lease_s * 1000), now, session_id, now,
        )
    if row is None:
        return None
    return Claim(row["id"], row["goal_id"], row["case_id"], int(row["depth"]), int(row["attempt"]), owner)


async def still_ours(c: Claim, lease_s: float | None = None) -> bool:
    """True while the claim holds the session (and, with `lease_s`, extend the lease)."""
    if lease_s is None:
        found = await db.row("SELECT id FROM goals_sessions WHERE id = {} AND attempt = {} AND status = 'running'", c.session_id, c.attempt)
    else:
        found = await db.row(
            "UPDATE goals_sessions SET lease_until_ms = {} WHERE id = {} AND attempt = {} AND status = 'running' RETURNING id",
            now_ms() + int(lease_s * 1000), c.session_id, c.attempt,
        )
    return found is not None


async def inbox(session_id: str) -> int:
    found = await db.row("SELECT inbox FROM goals_sessions WHERE id = {}", session_id)
    return int(found["inbox"]) if found else 0


async def end_run(c: Claim, status: str, *, taken: int | None = None) -> bool:
    """End this run with `status` (waiting, completed, failed, cancelled). `waiting` only when
    nothing came in since the inbox read `taken`: else the session stays runnable (pending)."""
    now = now_ms()
    if status == "waiting" and taken is not None:
        row = await db.row(
            "UPDATE goals_sessions SET status = 'waiting', lease_owner = NULL, lease_until_ms = 0, updated_ms = {} "
            "WHERE id = {} AND attempt = {} AND status = 'running' AND inbox = {} RETURNING id",
            now, c.session_id, c.attempt, taken,
        )
        if row is not None:
            return True
        status = "pending"
    row = await db.row(
        "UPDATE goals_sessions SET status = {}, lease_owner = NULL, lease_until_ms = 0, updated_ms = {} "
        "WHERE id = {} AND attempt = {} AND status = 'running' RETURNING id",
        status, now, c.session_id, c.attempt,
    )
    return row is not None


async def awake_count(goal_id: str) -> int:
    found = await db.row("SELECT COUNT(*) AS n FROM goals_sessions WHERE goal_id = {} AND status = 'running'", goal_id)
    return int(found["n"]) if found else 0


def session_row_fields(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("id", "goal_id", "case_id", "depth", "status")}
