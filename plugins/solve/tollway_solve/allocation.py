"""Allocation: assign item quantities to options, minimising cost or
maximising value, with option capacities, an optional budget, min/max shares
(with `if_used` floors), required and forbidden pairs, and split or whole items.

Solution shape (docs/solve.md):
    { assignments [{ item, option, quantity, cost, value }],
      unassigned [{ item, quantity }],
      options [{ option, quantity, capacity_used, share }],
      total_quantity, total_cost, total_value }
`cost`/`value` (and the totals) are null when the pairs carry none.

Numbers are scaled exactly to integers (at most 6 decimals) and solved with
CP-SAT; split quantities are multiples of the finest decimal among the input
quantities. An infeasible model is solved again with one assumption literal per
constraint group, and CP-SAT's infeasible core names the clashing constraints.
The checks live in allocation_check.py, written apart from this model.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Literal

import msgspec
from ortools.sat.python import cp_model

from . import allocation_check
from .bounds import LIST_MAX as MAX_ENTRIES
from .bounds import Amount, Fraction, Id
from .bounds import items as bounded
from .family import ENGINE, Conflict, ConflictConstraint, InputProblem, Outcome, cpsat_status
from .numbers import INT_SAFE, check_number, scale_for, scaled, unscale

name = "allocation"
VERSION = f"allocation-1/{ENGINE}"  # bump the revision when a change can alter answers
MAX_LOT_RATIO = 1_000_000


class AllocItem(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    quantity: Amount = 1


class AllocOption(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    capacity: Amount


class Pair(msgspec.Struct, forbid_unknown_fields=True):
    """Per unit of the item: `cost` (minimise_cost, budget) or `value` (maximise_value);
    `use` is the capacity one unit takes on the option (default 1)."""

    item: Id
    option: Id
    cost: Amount | None = None
    value: Amount | None = None
    use: Amount = 1


class Share(msgspec.Struct, forbid_unknown_fields=True):
    """A fraction (0..1) of the total quantity assigned. `if_used`: a min_share
    floor that applies only when the option receives something."""

    option: Id
    share: Fraction
    if_used: bool = False


class ItemOption(msgspec.Struct, forbid_unknown_fields=True):
    item: Id
    option: Id


# list lengths: 2 * pairs + options + items stays within the 100,000-variable estimate
MAX_PAIRS = 50_000


class AllocationBlock(msgspec.Struct, forbid_unknown_fields=True):
    objective: Literal["minimise_cost", "maximise_value"]
    items: bounded(AllocItem, most=MAX_ENTRIES, least=1)  # type: ignore[valid-type]
    options: bounded(AllocOption, most=MAX_ENTRIES, least=1)  # type: ignore[valid-type]
    pairs: bounded(Pair, most=MAX_PAIRS, least=1)  # type: ignore[valid-type]
    split: bool = False
    max_total_cost: Amount | None = None
    min_share: bounded(Share, most=MAX_ENTRIES) = []  # type: ignore[valid-type]  # one per option at most
    max_share: bounded(Share, most=MAX_ENTRIES) = []  # type: ignore[valid-type]
    required: bounded(ItemOption, most=MAX_ENTRIES, enforce=True) = []  # type: ignore[valid-type]
    forbidden: bounded(ItemOption, most=MAX_ENTRIES, enforce=True) = []  # type: ignore[valid-type]
    assign_all: bool = False  # maximise_value: every item must still be assigned in full


block_type = AllocationBlock


# -- validation -------------------------------------------------------------------
def _ids(entries: list[Any], field: str) -> None:
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if not e.id.strip():
            raise InputProblem("empty_id", "ids must not be empty", f"{field}[{i}].id")
        if e.id in seen:
            raise InputProblem("duplicate_id", f"id {e.id!r} appears twice", f"{field}[{i}].id")
        seen.add(e.id)


def must_assign(block: AllocationBlock) -> bool:
    return block.objective == "minimise_cost" or block.assign_all


def validate(block: AllocationBlock) -> None:
    for field, entries in (("allocation.items", block.items), ("allocation.options", block.options)):
        if not entries:
            raise InputProblem("empty_list", "at least one entry is needed", field)
        _ids(entries, field)
    if not block.pairs:
        raise InputProblem("empty_list", "at least one pair is needed", "allocation.pairs")
    items = {it.id for it in block.items}
    options = {o.id for o in block.options}
    for i, it in enumerate(block.items):
        check_number(it.quantity, f"allocation.items[{i}].quantity")
    for i, o in enumerate(block.options):
        check_number(o.capacity, f"allocation.options[{i}].capacity")
    pairs: set[tuple[str, str]] = set()
    need = "cost" if block.objective == "minimise_cost" else "value"
    for i, p in enumerate(block.pairs):
        f = f"allocation.pairs[{i}]"
        if p.item not in items:
            raise InputProblem("unknown_id", f"{p.item!r} is not an item id", f"{f}.item")
        if p.option not in options:
            raise InputProblem("unknown_id", f"{p.option!r} is not an option id", f"{f}.option")
        if (p.item, p.option) in pairs:
            raise InputProblem("duplicate_id", f"pair {p.item!r}/{p.option!r} appears twice", f)
        pairs.add((p.item, p.option))
        if getattr(p, need) is None:
            raise InputProblem(f"missing_{need}", f"{block.objective} needs a {need} on every pair", f"{f}.{need}")
        if block.max_total_cost is not None and p.cost is None:
            raise InputProblem("missing_cost", "max_total_cost needs a cost on every pair", f"{f}.cost")
        for attr in ("cost", "value", "use"):
            v = getattr(p, attr)
            if v is not None:
                check_number(v, f"{f}.{attr}")
    if block.max_total_cost is not None:
        check_number(block.max_total_cost, "allocation.max_total_cost")
    for kind in ("min_share", "max_share"):
        seen: set[str] = set()
        for i, s in enumerate(getattr(block, kind)):
            f = f"allocation.{kind}[{i}]"
            if s.option not in options:
                raise InputProblem("unknown_id", f"{s.option!r} is not an option id", f"{f}.option")
            if s.option in seen:
                raise InputProblem("duplicate_id", f"option {s.option!r} has two {kind} entries", f"{f}.option")
            seen.add(s.option)
            check_number(s.share, f"{f}.share", limit=1)
    lo = {s.option: s.share for s in block.min_share}
    for i, s in enumerate(block.max_share):
        if s.option in lo and lo[s.option] > s.share:
            raise InputProblem(
                "contradictory_input", f"min_share of {s.option!r} exceeds its max_share", f"allocation.max_share[{i}]"
            )
    forbidden = set()
    for i, r in enumerate(block.forbidden):
        _pair_ref(r, items, options, f"allocation.forbidden[{i}]")
        forbidden.add((r.item, r.option))
    required_for: dict[str, str] = {}
    for i, r in enumerate(block.required):
        f = f"allocation.required[{i}]"
        _pair_ref(r, items, options, f)
        if (r.item, r.option) in forbidden:
            raise InputProblem("contradictory_input", f"pair {r.item!r}/{r.option!r} is both required and forbidden", f)
        if (r.item, r.option) not in pairs:
            raise InputProblem("unknown_id", f"required pair {r.item!r}/{r.option!r} is not among the pairs", f)
        if not block.split and r.item in required_for and required_for[r.item] != r.option:
            raise InputProblem("contradictory_input", f"item {r.item!r} cannot go whole to two required options", f)
        required_for[r.item] = r.option
    if block.min_share or block.max_share or block.max_total_cost is not None:
        lots = [it.quantity for it in block.items if it.quantity > 0]
        if lots and max(lots) / min(lots) > MAX_LOT_RATIO:
            raise InputProblem(
                "bad_quantity",
                f"with shares or a budget the largest to smallest item quantity ratio must be at most {MAX_LOT_RATIO:,}",
                "allocation.items",
            )
    d = _Data.of(block)
    total = sum(d.qty)
    top = max([max(d.use, default=1), max(d.cost, default=1), max(d.value, default=1), 10**d.share_scale, 1])
    if total * top >= INT_SAFE or any(c >= INT_SAFE for c in d.cap):
        raise InputProblem(
            "unsupported_precision",
            "these quantities and prices need more precision than can be solved exactly",
            "allocation",
        )


def _pair_ref(r: ItemOption, items: set[str], options: set[str], f: str) -> None:
    if r.item not in items:
        raise InputProblem("unknown_id", f"{r.item!r} is not an item id", f"{f}.item")
    if r.option not in options:
        raise InputProblem("unknown_id", f"{r.option!r} is not an option id", f"{f}.option")


@dataclasses.dataclass
class _Data:
    qs: int  # decimal scale of quantities
    us: int  # of uses
    cs: int  # of costs
    vs: int  # of values
    share_scale: int
    qty: list[int]  # per item, scaled by qs
    cap: list[int]  # per option, scaled by qs + us (floored: the left side is integral)
    use: list[int]  # per pair
    cost: list[int]
    value: list[int]
    budget: int | None  # scaled by cs + qs

    @classmethod
    def of(cls, block: AllocationBlock) -> _Data:
        qs = scale_for([it.quantity for it in block.items])
        us = scale_for([p.use for p in block.pairs])
        cs = scale_for([p.cost or 0 for p in block.pairs])
        vs = scale_for([p.value or 0 for p in block.pairs])
        ss = scale_for([s.share for s in block.min_share + block.max_share])
        from decimal import ROUND_FLOOR

        from .numbers import dec

        cap = [int(dec(o.capacity).scaleb(qs + us).to_integral_value(rounding=ROUND_FLOOR)) for o in block.options]
        budget = None
        if block.max_total_cost is not None:
            budget = int(dec(block.max_total_cost).scaleb(cs + qs).to_integral_value(rounding=ROUND_FLOOR))
        return cls(
            qs,
            us,
            cs,
            vs,
            ss,
            [scaled(it.quantity, qs) for it in block.items],
            cap,
            [scaled(p.use, us) for p in block.pairs],
            [scaled(p.cost or 0, cs) for p in block.pairs],
            [scaled(p.value or 0, vs) for p in block.pairs],
            budget,
        )


def estimate_variables(block: AllocationBlock) -> int:
    """The variable estimate (docs/solve.md): 2 x pairs + options + items."""
    return 2 * len(block.pairs) + len(block.options) + len(block.items)


def size(block: AllocationBlock) -> dict[str, int]:
    return {"items": len(block.items), "options": len(block.options), "pairs": len(block.pairs)}


def price_units(block: AllocationBlock) -> int:
    """Items x options."""
    return len(block.items) * len(block.options)


# -- model ---------------------------------------------------------------------------
def _allowed(block: AllocationBlock) -> list[int]:
    forbidden = {(r.item, r.option) for r in block.forbidden}
    return [k for k, p in enumerate(block.pairs) if (p.item, p.option) not in forbidden]


@dataclasses.dataclass
class _Model:
    m: cp_model.CpModel
    x: dict[int, Any]  # pair index -> quantity expression (scaled)
    groups: list[tuple[Any, ConflictConstraint]]  # assumption literal, what it stands for
    nvars: int


def _build(block: AllocationBlock, d: _Data, with_assumptions: bool) -> _Model:
    m = cp_model.CpModel()
    groups: list[tuple[Any, ConflictConstraint]] = []

    def guard(con: Any, family: str, ref: str, label: str) -> None:
        if with_assumptions:
            lit = m.NewBoolVar(f"{family}:{ref}")
            con.OnlyEnforceIf(lit)
            groups.append((lit, ConflictConstraint(family, ref, label)))

    item_index = {it.id: i for i, it in enumerate(block.items)}
    opt_index = {o.id: j for j, o in enumerate(block.options)}
    allowed = _allowed(block)
    x: dict[int, Any] = {}
    chosen: dict[int, Any] = {}
    nvars = 0
    for k in allowed:
        p = block.pairs[k]
        q = d.qty[item_index[p.item]]
        if q == 0:
            continue
        if block.split:
            x[k] = m.NewIntVar(0, q, "")
            nvars += 1
        else:
            chosen[k] = m.NewBoolVar("")
            x[k] = q * chosen[k]
            nvars += 1
    by_item: dict[int, list[int]] = {}
    by_option: dict[int, list[int]] = {}
    for k in x:
        by_item.setdefault(item_index[block.pairs[k].item], []).append(k)
        by_option.setdefault(opt_index[block.pairs[k].option], []).append(k)
    full = must_assign(block)
    for i, it in enumerate(block.items):
        ks = by_item.get(i, [])
        if d.qty[i] == 0:
            continue
        if full:
            con = m.Add(sum(x[k] for k in ks) == d.qty[i]) if ks else m.Add(m.NewConstant(0) == 1)
            guard(con, "assignment", it.id, f"item {it.id!r} must be assigned in full")
        elif ks:
            m.Add(sum(x[k] for k in ks) <= d.qty[i])
        if not block.split and ks:
            m.Add(sum(chosen[k] for k in ks) <= 1)
    for j, o in enumerate(block.options):
        ks = by_option.get(j, [])
        if ks:
            con = m.Add(sum(d.use[k] * x[k] for k in ks) <= d.cap[j])
            guard(con, "capacity", o.id, f"capacity {o.capacity:g} of option {o.id!r}")
    if d.budget is not None and x:
        con = m.Add(sum(d.cost[k] * x[k] for k in x) <= d.budget)
        guard(con, "budget", "max_total_cost", f"max_total_cost {block.max_total_cost:g}")
    zero = m.NewConstant(0)
    total = sum(x.values(), zero)
    opt_total = {j: sum((x[k] for k in ks), zero) for j, ks in by_option.items()}
    unit = 10**d.share_scale
    for s in block.min_share:
        j = opt_index[s.option]
        got = opt_total.get(j, zero)
        sh = scaled(s.share, d.share_scale)
        if s.if_used:
            used = m.NewBoolVar("")
            nvars += 1
            m.Add(got >= 1).OnlyEnforceIf(used)
            m.Add(got == 0).OnlyEnforceIf(used.Not())
            enforce = [used]
            if with_assumptions:
                lit = m.NewBoolVar("")
                enforce.append(lit)
                groups.append(
                    (lit, ConflictConstraint("min_share", s.option, f"min_share {s.share:g} of {s.option!r} when used"))
                )
            m.Add(unit * got >= sh * total).OnlyEnforceIf(enforce)
        else:
            con = m.Add(unit * got >= sh * total)
            guard(con, "min_share", s.option, f"min_share {s.share:g} of {s.option!r}")
    for s in block.max_share:
        j = opt_index[s.option]
        got = opt_total.get(j, zero)
        con = m.Add(unit * got <= scaled(s.share, d.share_scale) * total)
        guard(con, "max_share", s.option, f"max_share {s.share:g} of {s.option!r}")
    for r in block.required:
        k = next(k for k, p in enumerate(block.pairs) if (p.item, p.option) == (r.item, r.option))
        if k in x:
            con = m.Add(x[k] >= 1)
            guard(con, "required", f"{r.item},{r.option}", f"{r.item!r} must go to {r.option!r}")
    if block.objective == "minimise_cost":
        m.Minimize(sum(d.cost[k] * x[k] for k in x) if x else 0)
    else:
        m.Maximize(sum(d.value[k] * x[k] for k in x) if x else 0)
    if with_assumptions:
        m.AddAssumptions([lit for lit, _ in groups])
    return _Model(m, x, groups, nvars)


def solve(block: AllocationBlock, time_limit_s: float) -> Outcome:
    started = time.monotonic()
    d = _Data.of(block)
    model = _build(block, d, with_assumptions=False)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.5, time_limit_s - (time.monotonic() - started))
    solver.parameters.num_workers = max(2, min(8, os.cpu_count() or 2))
    status = solver.Solve(model.m)
    if status == cp_model.MODEL_INVALID:
        raise RuntimeError(model.m.Validate())
    if status == cp_model.INFEASIBLE:
        return _infeasible(block, d, max(0.5, time_limit_s - (time.monotonic() - started)), model.nvars)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Outcome(cpsat_status(status, False), None, None, None, None, variables_built=model.nvars)
    qty = {k: solver.Value(e) for k, e in model.x.items()}
    sol = _solution(block, d, qty)
    obj_scale = d.cs + d.qs if block.objective == "minimise_cost" else d.vs + d.qs
    value = unscale(round(solver.ObjectiveValue()), obj_scale)
    if cpsat_status(status, True) == "optimal":
        return Outcome("optimal", value, value, 0.0, sol, variables_built=model.nvars)
    bound = unscale(round(solver.BestObjectiveBound()), obj_scale)
    return Outcome(
        cpsat_status(status, True),
        value,
        bound,
        abs(value - bound) / max(1.0, abs(value)),
        sol,
        variables_built=model.nvars,
    )


def _infeasible(block: AllocationBlock, d: _Data, time_left: float, nvars: int) -> Outcome:
    model = _build(block, d, with_assumptions=True)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = min(time_left, 30.0)
    solver.parameters.num_workers = 1
    status = solver.Solve(model.m)
    core = set(solver.SufficientAssumptionsForInfeasibility()) if status == cp_model.INFEASIBLE else set()
    cons = [c for lit, c in model.groups if lit.Index() in core]
    if not cons:  # no core within the time: name every constraint group
        cons = [c for _, c in model.groups]
    return Outcome(
        "infeasible",
        None,
        None,
        None,
        None,
        conflicts=[
            Conflict(
                cons,
                "these constraints cannot all hold at once (an infeasible core found by CP-SAT; not necessarily minimal)",
            )
        ],
        variables_built=nvars,
        conflicts_complete=False,
    )


def _solution(block: AllocationBlock, d: _Data, qty: dict[int, int]) -> dict[str, Any]:
    has_cost = all(p.cost is not None for p in block.pairs)
    has_value = all(p.value is not None for p in block.pairs)
    assignments = []
    per_item: dict[str, int] = {}
    per_opt: dict[str, tuple[int, int]] = {}
    tc = tv = 0
    for k, q in sorted(qty.items()):
        if q <= 0:
            continue
        p = block.pairs[k]
        c, v = d.cost[k] * q, d.value[k] * q
        tc += c
        tv += v
        assignments.append(
            {
                "item": p.item,
                "option": p.option,
                "quantity": unscale(q, d.qs),
                "cost": unscale(c, d.cs + d.qs) if has_cost else None,
                "value": unscale(v, d.vs + d.qs) if has_value else None,
            }
        )
        per_item[p.item] = per_item.get(p.item, 0) + q
        oq, ou = per_opt.get(p.option, (0, 0))
        per_opt[p.option] = (oq + q, ou + d.use[k] * q)
    total = sum(per_item.values())
    unassigned = [
        {"item": it.id, "quantity": unscale(d.qty[i] - per_item.get(it.id, 0), d.qs)}
        for i, it in enumerate(block.items)
        if d.qty[i] - per_item.get(it.id, 0) > 0
    ]
    options = [
        {
            "option": o.id,
            "quantity": unscale(per_opt.get(o.id, (0, 0))[0], d.qs),
            "capacity_used": unscale(per_opt.get(o.id, (0, 0))[1], d.qs + d.us),
            "share": (per_opt.get(o.id, (0, 0))[0] / total) if total else 0.0,
        }
        for o in block.options
    ]
    return {
        "assignments": assignments,
        "unassigned": unassigned,
        "options": options,
        "total_quantity": unscale(total, d.qs),
        "total_cost": unscale(tc, d.cs + d.qs) if has_cost else None,
        "total_value": unscale(tv, d.vs + d.qs) if has_value else None,
    }


check = allocation_check.check
objective = allocation_check.objective
