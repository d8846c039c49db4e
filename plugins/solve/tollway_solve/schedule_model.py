"""CP-SAT model for the schedule family (see schedule.py for the block's semantics)."""

from __future__ import annotations

import os
import time
from typing import Any

from ortools.sat.python import cp_model

from . import schedule_hint
from .family import Conflict, ConflictConstraint, Outcome, cpsat_status
from .schedule_block import ScheduleBlock, _decimals_scale, _job_windows, horizon
from .schedule_check import objective

TIEBREAK_S = 5.0  # cost objective: time spent shortening the makespan once cost is proven


def _workers() -> int:
    """A small portfolio: on 2 cores four workers beat eight (fewer neighbourhood searches
    competing with the workers that prove the bound)."""
    return min(8, max(4, 2 * (os.cpu_count() or 2)))


def _solver(time_limit_s: float) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = _workers()
    solver.parameters.max_time_in_seconds = max(0.1, float(time_limit_s))
    # stronger reasoning on machines that run one job at a time (job shop proofs: ft10 from ~15 s to a few)
    solver.parameters.use_strong_propagation_in_disjunctive = True
    solver.parameters.use_dynamic_precedence_in_disjunctive = True
    return solver


class _Built:
    def __init__(self) -> None:
        self.model = cp_model.CpModel()
        self.starts: dict[str, cp_model.IntVar] = {}
        self.ends: dict[str, cp_model.IntVar] = {}
        self.tard: dict[str, Any] = {}
        self.makespan: Any = None
        self.assumptions: dict[int, ConflictConstraint] = {}
        self.assumption_vars: list[Any] = []


def _allowed_starts(job, wins, release, deadline):
    """Start intervals for a job: fits a window, >= release, end <= deadline."""
    d = job.duration
    out = []
    for a, b in wins:
        lo, hi = max(a, release), b - d
        if deadline is not None:
            hi = min(hi, deadline - d)
        if lo <= hi:
            out.append((lo, hi))
    return out


def build(block: ScheduleBlock, explain: bool = False) -> _Built:
    """explain=True: every constraint group sits behind an assumption literal."""
    b = _Built()
    m = b.model
    H = horizon(block)
    low = min([j.release for j in block.jobs] + [0])
    for r in block.resources:
        for w in r.calendar or []:
            low = min(low, w.start)
    hard_due = block.objective != "tardiness"
    amt_scale = _decimals_scale(
        [r.capacity for r in block.resources] + [a for j in block.jobs for a in j.needs.values()], 3, ""
    )

    def lit(family: str, ref: str, label: str):
        if not explain:
            return None
        v = m.NewBoolVar(f"a_{family}_{ref}")
        b.assumptions[v.Index()] = ConflictConstraint(family=family, ref=ref, label=label)
        b.assumption_vars.append(v)
        return v

    intervals: dict[str, Any] = {}
    for j in block.jobs:
        d = j.duration
        wins = _job_windows(block, j)
        if not explain:
            allowed = _allowed_starts(
                j,
                wins if wins is not None else [(low, H)],
                j.release,
                j.due if (hard_due and j.due is not None) else None,
            )
            if allowed:
                s = m.NewIntVarFromDomain(cp_model.Domain.FromIntervals([[lo, hi] for lo, hi in allowed]), f"s_{j.id}")
            else:  # no start fits: a contradiction the explanation pass will name
                s = m.NewIntVar(low, H, f"s_{j.id}")
                m.Add(s < low)
        else:
            s = m.NewIntVar(low, H, f"s_{j.id}")
            lr = lit("release", j.id, f"job {j.id} starts no earlier than {j.release}")
            m.Add(s >= j.release).OnlyEnforceIf(lr)
            if hard_due and j.due is not None:
                ld = lit("deadline", j.id, f"job {j.id} ends by its due time {j.due}")
                m.Add(s + d <= j.due).OnlyEnforceIf(ld)
            if wins is not None:
                cal_res = [
                    rid
                    for rid, a in j.needs.items()
                    if a > 0 and any(r.id == rid and r.calendar is not None for r in block.resources)
                ]
                lc = lit(
                    "calendar",
                    ",".join([j.id] + cal_res),
                    f"job {j.id} fits one calendar window of {', '.join(cal_res)}",
                )
                allowed = _allowed_starts(j, wins, low, None)
                if allowed:
                    m.AddLinearExpressionInDomain(
                        s, cp_model.Domain.FromIntervals([[lo, hi] for lo, hi in allowed])
                    ).OnlyEnforceIf(lc)
                else:
                    m.AddBoolOr([lc.Not()])
        e = m.NewIntVar(low, H + max(0, d), f"e_{j.id}")
        m.Add(e == s + d)
        b.starts[j.id], b.ends[j.id] = s, e
        intervals[j.id] = m.NewIntervalVar(s, d, e, f"i_{j.id}")

    for p in block.precedence:
        lp = lit("precedence", f"{p.before}->{p.after}", f"{p.after} starts at least {p.lag} after {p.before} ends")
        c = m.Add(b.starts[p.after] >= b.ends[p.before] + p.lag)
        if lp is not None:
            c.OnlyEnforceIf(lp)

    for r in block.resources:
        users = [(j, round(j.needs.get(r.id, 0) * amt_scale)) for j in block.jobs]
        users = [(j, a) for j, a in users if a > 0 and j.duration > 0]
        if not users:
            continue
        cap = round(r.capacity * amt_scale)
        lc = lit("capacity", r.id, f"resource {r.id} holds at most {r.capacity} at a time")
        if lc is not None:
            ivs = [
                m.NewOptionalIntervalVar(b.starts[j.id], j.duration, b.ends[j.id], lc, f"o_{r.id}_{j.id}")
                for j, _ in users
            ]
        else:
            ivs = [intervals[j.id] for j, _ in users]
        dem = sorted(a for _, a in users)
        if len(dem) >= 2 and dem[0] + dem[1] > cap and dem[-1] <= cap:
            m.AddNoOverlap(ivs)
        else:
            m.AddCumulative(ivs, [a for _, a in users], cap)

    if not explain:
        ms = m.NewIntVar(low, H + max([j.duration for j in block.jobs] + [0]), "makespan")
        # only jobs with no successor can end last; inequalities suffice for a minimised makespan
        has_succ = {p.before for p in block.precedence if p.lag >= 0}
        for j in block.jobs:
            if j.id not in has_succ:
                m.Add(ms >= b.ends[j.id])
        b.makespan = ms
        if block.objective == "makespan":
            m.Minimize(ms)
        elif block.objective == "tardiness":
            wscale = _decimals_scale([j.weight for j in block.jobs], 6, "")
            terms = []
            for j in block.jobs:
                if j.due is None:
                    continue
                t = m.NewIntVar(0, max(0, H + j.duration - j.due), f"t_{j.id}")
                m.Add(t >= b.ends[j.id] - j.due)
                b.tard[j.id] = t
                w = round(j.weight * wscale)
                if w:
                    terms.append(w * t)
            m.Minimize(sum(terms) if terms else 0)
        # "cost": constant over feasible schedules; the makespan tie-break is a second solve.
    return b


def _precheck(block: ScheduleBlock) -> list[Conflict]:
    """Contradictions visible without search."""
    out = []
    res = {r.id: r for r in block.resources}
    for j in block.jobs:
        for rid, a in j.needs.items():
            if a > res[rid].capacity + 1e-12 and j.duration > 0:
                out.append(
                    Conflict(
                        constraints=[
                            ConflictConstraint("need", f"{j.id}:{rid}", f"job {j.id} needs {a} of {rid}"),
                            ConflictConstraint("capacity", rid, f"resource {rid} has capacity {res[rid].capacity}"),
                        ],
                        explanation=f"job {j.id} needs more of {rid} than its capacity",
                    )
                )
    return out


def _solution(block: ScheduleBlock, solver: cp_model.CpSolver, b: _Built) -> dict[str, Any]:
    starts = []
    for j in block.jobs:
        s = solver.Value(b.starts[j.id])
        e = s + j.duration
        starts.append(
            {
                "job": j.id,
                "start": s,
                "end": e,
                "resources": {r: a for r, a in j.needs.items() if a > 0},
                "tardiness": max(0, e - j.due) if j.due is not None else 0,
            }
        )
    return {"starts": starts, "makespan": max([s["end"] for s in starts] + [0])}


def _explain(block: ScheduleBlock, time_limit_s: float) -> tuple[list[Conflict], bool]:
    b = build(block, explain=True)
    b.model.AddAssumptions(b.assumption_vars)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(0.5, time_limit_s)
    st = solver.Solve(b.model)
    if st == cp_model.INFEASIBLE:
        core = solver.SufficientAssumptionsForInfeasibility()
        cons = [b.assumptions[i] for i in core if i in b.assumptions]
        if cons:
            return [Conflict(constraints=cons, explanation="these constraints cannot all hold together")], True
    cons = list(b.assumptions.values())
    return [
        Conflict(
            constraints=cons, explanation="no schedule satisfies all constraints; the clashing subset was not isolated"
        )
    ], False


def solve(block: ScheduleBlock, time_limit_s: float) -> Outcome:
    t0 = time.monotonic()
    pre = _precheck(block)
    if pre:
        return Outcome("infeasible", None, None, None, None, conflicts=pre, conflicts_complete=True)
    b = build(block)
    hint = schedule_hint.dispatch(block)
    if hint is not None:  # a dispatch-rule schedule as CP-SAT's first guess
        for j in block.jobs:
            b.model.AddHint(b.starts[j.id], hint[j.id])
    solver = _solver(time_limit_s)
    nvars = len(b.model.Proto().variables)
    if block.objective == "cost":
        solver.parameters.stop_after_first_solution = True
    st = solver.Solve(b.model)
    if st == cp_model.INFEASIBLE:
        left = max(0.5, time_limit_s - (time.monotonic() - t0))
        conflicts, complete = _explain(block, left)
        return Outcome(
            "infeasible",
            None,
            None,
            None,
            None,
            conflicts=conflicts,
            variables_built=nvars,
            conflicts_complete=complete,
        )
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Outcome(cpsat_status(st, False), None, None, None, None, variables_built=nvars)
    sol = _solution(block, solver, b)
    obj = objective(block, sol)
    if block.objective == "cost":
        # cost is fixed by the needs: proven optimal; use a little time to shorten the makespan
        left = min(TIEBREAK_S, time_limit_s - (time.monotonic() - t0))
        if left > 0.2:
            b.model.Minimize(b.makespan)
            hint = {j.id: solver.Value(b.starts[j.id]) for j in block.jobs}
            for j in block.jobs:
                b.model.AddHint(b.starts[j.id], hint[j.id])
            s2 = _solver(left)
            if s2.Solve(b.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                sol = _solution(block, s2, b)
        return Outcome("optimal", obj, obj, 0.0, sol, variables_built=nvars)
    if block.objective == "makespan":
        bound = float(solver.BestObjectiveBound())
    else:
        wscale = _decimals_scale([j.weight for j in block.jobs], 6, "")
        bound = float(solver.BestObjectiveBound()) / wscale
    status = cpsat_status(st, True)
    if status == "optimal" or bound >= obj:
        return Outcome("optimal", obj, obj, 0.0, sol, variables_built=nvars)
    gap = (obj - bound) / abs(obj) if obj else 0.0
    return Outcome(status, obj, bound, gap, sol, variables_built=nvars)
