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

from tollway import storage

from .goals import add_step
from .tables import Case, Goal, Step


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
        case = await storage.lock_rows(
            Case.select(Case.budget, Case.spent, Case.held, Case.step_limit, Case.steps).where(Case.id == case_id)
        ).first()
        if case is None:
            return Refused("budget")
        if counts_step and case["step_limit"] is not None and int(case["steps"]) >= int(case["step_limit"]):
            return Refused("steps")
        if case["budget"] is not None:
            if int(case["spent"]) + int(case["held"]) + amount > int(case["budget"]):
                return Refused("budget")
        elif not await _hold_goal(goal_id, amount):
            return Refused("budget")
        await Case.update({Case.held: Case.held + amount, Case.steps: Case.steps + (1 if counts_step else 0)}).where(
            Case.id == case_id
        )
        return None
    return None if await _hold_goal(goal_id, amount) else Refused("budget")


async def _hold_goal(goal_id: str, amount: int) -> bool:
    found = (
        await Goal.update({Goal.held: Goal.held + amount})
        .where(
            Goal.id == goal_id,
            Goal.status == "running",
            Goal.spent + Goal.held + amount <= Goal.budget,
        )
        .returning(Goal.id)
    )
    return bool(found)


async def lock_goal(goal_id: str) -> bool:
    """Lock the goal's row till the commit (the goal before its cases, everywhere: no two
    transactions wait on each other); whether the goal still runs."""
    found = await storage.lock_rows(Goal.select(Goal.status).where(Goal.id == goal_id)).first()
    return found is not None and found["status"] == "running"


async def take_hold(session_id: str, hold_id: str, seq: int, body: dict[str, object], now: int) -> None:
    """The stored hold of a step (its `amount` in `body`), in the transaction that held it."""
    await add_step(session_id, "hold", body, step_id=hold_id, seq=seq, at=now)


async def settle_hold(
    goal_id: str, case_id: str | None, hold_id: str, amount: int, cost: int, *, llm: object = None
) -> bool:
    """End the hold of `amount` stored as step `hold_id`: `cost` charged, the rest free again
    (0: all of it given back). The row is deleted, or with `llm` becomes that model turn.
    False, changing nothing, when the hold was settled already (by another run or a sweep)."""
    if llm is None:
        found = await Step.delete().where(Step.id == hold_id, Step.kind == "hold").returning(Step.id)
    else:
        found = (
            await Step.update({Step.kind: "llm", Step.body: storage.dumps(llm), Step.cost: cost})
            .where(
                Step.id == hold_id,
                Step.kind == "hold",
            )
            .returning(Step.id)
        )
    if not found:
        return False
    await charge_step(goal_id, case_id, amount, cost)
    return True


async def charge_step(goal_id: str, case_id: str | None, held: int, cost: int) -> None:
    """End a step's hold: `cost` (at most what was held) becomes spent, the rest is free again."""
    cost = min(cost, held)
    await lock_goal(goal_id)
    if case_id is not None:
        sliced = await Case.select(Case.budget).where(Case.id == case_id).first()
        await Case.update({Case.held: Case.held - held, Case.spent: Case.spent + cost}).where(Case.id == case_id)
        if sliced is not None and sliced["budget"] is not None:
            # the slice stays set aside on the goal; only what was spent moves to spent
            await _move_to_spent(goal_id, cost, cost)
            return
    await _move_to_spent(goal_id, held, cost)


async def _move_to_spent(goal_id: str, held: int, cost: int) -> None:
    await Goal.update({Goal.held: Goal.held - held, Goal.spent: Goal.spent + cost}).where(Goal.id == goal_id)


async def release_step(goal_id: str, case_id: str | None, held: int) -> None:
    """Give a step's hold back unspent (the step never ran, or a resumed session redoes it)."""
    await charge_step(goal_id, case_id, held, 0)


async def release_slice(goal_id: str, case_id: str) -> None:
    """A case that ended gives back what its slice has left (what it may spend becomes what it
    spent; the slice it shows stays the one given)."""
    await lock_goal(goal_id)
    case = await storage.lock_rows(Case.select(Case.budget, Case.spent, Case.held).where(Case.id == case_id)).first()
    if case is None or case["budget"] is None:
        return
    unused = int(case["budget"]) - int(case["spent"]) - int(case["held"])
    if unused > 0:
        await Case.update({Case.budget: Case.budget - unused}).where(Case.id == case_id)
        await Goal.update({Goal.held: Goal.held - unused}).where(Goal.id == goal_id)
