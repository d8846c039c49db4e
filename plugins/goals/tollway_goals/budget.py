"""A goal's money: its budget is paid when the goal is created; every step it takes holds
its price first and is charged (held -> spent) when its result is stored, in one
transaction, so a goal never spends past its budget and no step is paid twice. A case
spends inside the slice of the budget it was given (held on the goal when given), or,
without a slice, from what the goal has left; `step_limit` counts its model steps."""
from __future__ import annotations

import dataclasses

from . import db


@dataclasses.dataclass(frozen=True)
class Refused:
    """Why a hold was refused: `budget` or `steps` (the case then needs a person)."""

    reason: str


async def hold_slice(goal_id: str, amount: int) -> bool:
    """Set `amount` of the goal's budget aside for a case (False: not enough left)."""
    if amount == 0:
        return True
    found = await db.row(
        "UPDATE goals_goals SET held = held + {} WHERE id = {} AND spent + held + {} <= budget RETURNING id", amount, goal_id, amount,
    )
    return found is not None


async def hold_step(goal_id: str, case_id: str | None, amount: int, *, counts_step: bool) -> Refused | None:
    """Hold `amount` for one step of a session (of case `case_id`, or the root's when None),
    in the caller's transaction. None when held; else why not (nothing changed)."""
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
        "UPDATE goals_goals SET held = held + {} WHERE id = {} AND spent + held + {} <= budget RETURNING id", amount, goal_id, amount,
    )
    return found is not None


async def charge_step(goal_id: str, case_id: str | None, held: int, cost: int) -> None:
    """End a step's hold: `cost` (at most what was held) becomes spent, the rest is free again."""
    cost = min(cost, held)
    if case_id is not None:
        await db.rows("UPDATE goals_cases SET held = held - {}, spent = spent + {} WHERE id = {}", held, cost, case_id)
        sliced = await db.row("SELECT budget FROM goals_cases WHERE id = {}", case_id)
        if sliced is not None and sliced["budget"] is not None:
            # the slice stays set aside on the goal; only what was spent moves to spent
            await db.rows("UPDATE goals_goals SET held = held - {}, spent = spent + {} WHERE id = {}", cost, cost, goal_id)
            return
    await db.rows("UPDATE goals_goals SET held = held - {}, spent = spent + {} WHERE id = {}", held, cost, goal_id)


async def release_step(goal_id: str, case_id: str | None, held: int) -> None:
    """Give a step's hold back unspent (the step never ran, or a resumed session redoes it)."""
    await charge_step(goal_id, case_id, held, 0)


async def release_slice(goal_id: str, case_id: str) -> None:
    """A case that ended gives back what its slice has left (the case's slice becomes what it spent)."""
    case = await db.row("SELECT budget, spent, held FROM goals_cases WHERE id = {}" + db.for_update(), case_id)
    if case is None or case["budget"] is None:
        return
    unused = int(case["budget"]) - int(case["spent"]) - int(case["held"])
    if unused > 0:
        await db.rows("UPDATE goals_cases SET budget = budget - {} WHERE id = {}", unused, case_id)
        await db.rows("UPDATE goals_goals SET held = held - {} WHERE id = {}", unused, goal_id)
