"""A goal's money: its budget is paid when the goal is created; every step it takes holds
its price first and is charged (held -> spent) when its result is stored, in one
transaction, so a goal never spends past its budget and no step is paid twice. A case
spends inside the slice of the budget it was given (held on the goal when given), or,
without a slice, from what the goal has left; `step_limit` counts its model steps. Nothing is
held once the goal has ended. Each step's hold is a stored `hold` step: whoever deletes that
row charges or releases it, so a hold is settled once whatever races. Locks: the goal's row,
then a case's (as events take them), so no two transactions wait on each other."""
from __future__ import annotations

import dataclasses

from . import db


@dataclasses.dataclass(frozen=True)
class Refused:
    """Why a hold was refused: `budget` or `steps` (the case then needs a person), or `ended`
    (the goal ended: the session stops)."""

    reason: str


async def hold_slice(goal_id: str, amount: int) -> bool:
    """Set `amount` of the goal's budget aside for a case (False: not enough left)."""
    return amount == 0 or await _hold_goal(goal_id, amount)


async def hold_step(goal_id: str, case_id: str | None, amount: int, *, counts_step: bool) -> Refused | None:
    """Hold `amount` for one step of a session (of case `case_id`, or the root's when None),
    in the caller's transaction. None when held; else why not (nothing changed)."""
    if not await lock_goal(goal_id):
        return Refused("ended")
    if case_id is not None:
        case = await db.row(
            "SELECT budget, spent, held, step_limit, steps FROM goals_cases WHERE id = {}" + db.for_update(), case_id,
        )
        if case is None:
            return Refused("budget")
        if counts_step and case["step_limit"] is not None and int(case["steps"]) >= int(case["step_limit"]):
            return Refused("steps")
        if case["budget"] is not None:
            if int(case["spent"]) + int(case["held"]) + amount > int(case["budget"]):
                return Refused("budget")
        elif not await _hold_goal(goal_id, amount):
            return Refused("budget")
        await db.rows(
            "UPDATE goals_cases SET held = held + {}, steps = steps + {} WHERE id = {}", amount, 1 if counts_step else 0, case_id,
        )
        return None
    return None if await _hold_goal(goal_id, amount) else Refused("budget")


async def _hold_goal(goal_id: str, amount: int) -> bool:
    found = await db.row(
        "UPDATE goals_goals SET held = held + {} WHERE id = {} AND status = 'running' AND spent + held + {} <= budget RETURNING id",
        amount, goal_id, amount,
    )
    return found is not None


async def lock_goal(goal_id: str) -> bool:
    """Lock the goal's row till the commit (the goal before its cases, everywhere: no two
    transactions wait on each other); whether the goal still runs."""
    found = await db.row("SELECT status FROM goals_goals WHERE id = {}" + db.for_update(), goal_id)
    return found is not None and found["status"] == "running"


async def take_hold(session_id: str, hold_id: str, seq: int, body: dict[str, object], now: int) -> None:
    """The stored hold of a step (its `amount` in `body`), in the transaction that held it."""
    await db.rows(
        "INSERT INTO goals_steps (id, session_id, seq, kind, body, cost, created_ms) VALUES ({}, {}, {}, 'hold', {}, 0, {})",
        hold_id, session_id, seq, db.dumps(body), now,
    )


async def settle_hold(goal_id: str, case_id: str | None, hold_id: str, amount: int, cost: int, *, llm: object = None) -> bool:
    """End the hold of `amount` stored as step `hold_id`: `cost` charged, the rest free again
    (0: all of it given back). The row is deleted, or with `llm` becomes that model turn.
    False, changing nothing, when the hold was settled already (by another run or a sweep)."""
    if llm is None:
        found = await db.row("DELETE FROM goals_steps WHERE id = {} AND kind = 'hold' RETURNING id", hold_id)
    else:
        found = await db.row(
            "UPDATE goals_steps SET kind = 'llm', body = {}, cost = {} WHERE id = {} AND kind = 'hold' RETURNING id", db.dumps(llm), cost, hold_id,
        )
    if found is None:
        return False
    await charge_step(goal_id, case_id, amount, cost)
    return True


async def charge_step(goal_id: str, case_id: str | None, held: int, cost: int) -> None:
    """End a step's hold: `cost` (at most what was held) becomes spent, the rest is free again."""
    cost = min(cost, held)
    await lock_goal(goal_id)
    if case_id is not None:
        sliced = await db.row("SELECT budget FROM goals_cases WHERE id = {}", case_id)
        await db.rows("UPDATE goals_cases SET held = held - {}, spent = spent + {} WHERE id = {}", held, cost, case_id)
        if sliced is not None and sliced["budget"] is not None:
            # the slice stays set aside on the goal; only what was spent moves to spent
            await db.rows("UPDATE goals_goals SET held = held - {}, spent = spent + {} WHERE id = {}", cost, cost, goal_id)
            return
    await db.rows("UPDATE goals_goals SET held = held - {}, spent = spent + {} WHERE id = {}", held, cost, goal_id)


async def release_step(goal_id: str, case_id: str | None, held: int) -> None:
    """Give a step's hold back unspent (the step never ran, or a resumed session redoes it)."""
    await charge_step(goal_id, case_id, held, 0)


async def release_slice(goal_id: str, case_id: str) -> None:
    """A case that ended gives back what its slice has left (what it may spend becomes what it
    spent; the slice it shows stays the one given)."""
    await lock_goal(goal_id)
    case = await db.row("SELECT budget, spent, held FROM goals_cases WHERE id = {}" + db.for_update(), case_id)
    if case is None or case["budget"] is None:
        return
    unused = int(case["budget"]) - int(case["spent"]) - int(case["held"])
    if unused > 0:
        await db.rows("UPDATE goals_cases SET budget = budget - {} WHERE id = {}", unused, case_id)
        await db.rows("UPDATE goals_goals SET held = held - {} WHERE id = {}", unused, goal_id)
