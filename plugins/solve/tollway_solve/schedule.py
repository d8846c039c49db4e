"""Schedule family: jobs on renewable resources, CP-SAT interval model.

Block (`schedule`)::

    objective     "makespan" | "tardiness" | "cost"           (default "makespan")
    time_unit     label only, default "minutes"; all times are integers in it
    resources     [{id, capacity (default 1), calendar [{start, end}] (optional),
                    cost_per_unit_time (default 0)}]
    jobs          [{id, duration (int >= 0), release (int, default 0),
                    due (int, optional), needs {resource: amount}, weight (default 1)}]
    precedence    [{before, after, lag (int, default 0)}]   after.start >= before.end + lag

Semantics
* A job holds `needs[r]` units of resource r during [start, end), end = start + duration.
* `calendar` lists the windows in which a resource is available (none = always). A job
  needing a resource with a calendar must fit inside one window: window.start <= start
  and end <= window.end (windows of one resource may touch but not overlap).
* `due`: with objective "tardiness" it is soft: tardiness = max(0, end - due), objective
  sum(weight * tardiness). With the other objectives it is a hard deadline: end <= due.
* "cost" = sum over jobs of weight * duration * sum_r needs[r] * cost_per_unit_time[r]. Needs
  are fixed, so every feasible schedule has the same cost: the first feasible schedule is
  proven optimal for it; remaining time (at most a short tie-break budget) shortens the makespan.
* Amounts (capacity, needs) may have up to 3 decimals, weights and rates up to 6; finer
  precision is refused (`unsupported_precision`).

Solution: `{starts: [{job, start, end, resources {r: amount}, tardiness}], makespan}`.

Statuses follow the one rule every family shares (family.status_of): `optimal` only when
CP-SAT proves optimality; a schedule without proof when the time ran out is `timeout`;
`infeasible` when CP-SAT (or a direct pre-check) proves there is none, with `conflicts`
naming the clashing constraints (from an assumption core: not necessarily minimal).
Machines that run one job at a time (capacity below any two needs) are NoOverlap
constraints, solved with CP-SAT's stronger disjunctive reasoning.

Validation codes (InputProblem.code): empty_id, duplicate_id, unknown_id, no_jobs,
reversed_window, overlapping_windows, precedence_cycle, bad_magnitude, unsupported_precision.
"""

from __future__ import annotations

from typing import Any

from .family import ENGINE, Check, InputProblem, Outcome
from .schedule_block import (  # noqa: F401  (the block types stay importable from here)
    MAX_HORIZON,
    MAX_JOBS,
    MAX_MAGNITUDE,
    TOL,
    Job,
    Precedence,
    Resource,
    ScheduleBlock,
    Time,
    Window,
    _check_number,
    _decimals_scale,
    _intersect,
    _job_windows,
    horizon,
)

# ---------------------------------------------------------------- family


class ScheduleFamily:
    name = "schedule"
    block_type = ScheduleBlock
    VERSION = f"schedule-2/{ENGINE}"  # bump the revision when a change can alter answers

    # -------------------------------------------------------- validation
    def validate(self, block: ScheduleBlock) -> None:
        if not block.jobs:
            raise InputProblem("no_jobs", "at least one job is required", "schedule.jobs")
        res_ids: set[str] = set()
        for i, r in enumerate(block.resources):
            f = f"schedule.resources[{i}]"
            if not r.id:
                raise InputProblem("empty_id", "resource id is empty", f + ".id")
            if r.id in res_ids:
                raise InputProblem("duplicate_id", f"resource id {r.id!r} appears twice", f + ".id")
            res_ids.add(r.id)
            _check_number(r.capacity, f + ".capacity")
            _check_number(r.cost_per_unit_time, f + ".cost_per_unit_time")
            if r.calendar is not None:
                for k, w in enumerate(r.calendar):
                    _check_number(w.start, f"{f}.calendar[{k}].start", allow_negative=True)
                    _check_number(w.end, f"{f}.calendar[{k}].end", allow_negative=True)
                    if w.end <= w.start:
                        raise InputProblem(
                            "reversed_window",
                            f"calendar window {k} of resource {r.id!r} ends at or before it starts",
                            f"{f}.calendar[{k}]",
                        )
                ws = sorted(r.calendar, key=lambda w: w.start)
                for a, b in zip(ws, ws[1:]):
                    if b.start < a.end:
                        raise InputProblem(
                            "overlapping_windows",
                            f"calendar windows [{a.start},{a.end}] and [{b.start},{b.end}] of resource {r.id!r} overlap",
                            f + ".calendar",
                        )
        job_ids: set[str] = set()
        for i, j in enumerate(block.jobs):
            f = f"schedule.jobs[{i}]"
            if not j.id:
                raise InputProblem("empty_id", "job id is empty", f + ".id")
            if j.id in job_ids:
                raise InputProblem("duplicate_id", f"job id {j.id!r} appears twice", f + ".id")
            job_ids.add(j.id)
            _check_number(j.duration, f + ".duration")
            _check_number(j.release, f + ".release", allow_negative=True)
            if j.due is not None:
                _check_number(j.due, f + ".due", allow_negative=True)
            _check_number(j.weight, f + ".weight")
            for rid, amt in j.needs.items():
                if rid not in res_ids:
                    raise InputProblem("unknown_id", f"job {j.id!r} needs unknown resource {rid!r}", f"{f}.needs.{rid}")
                _check_number(amt, f"{f}.needs.{rid}")
        for i, p in enumerate(block.precedence):
            f = f"schedule.precedence[{i}]"
            for side in ("before", "after"):
                v = getattr(p, side)
                if not v:
                    raise InputProblem("empty_id", f"precedence {side} is empty", f"{f}.{side}")
                if v not in job_ids:
                    raise InputProblem("unknown_id", f"precedence names unknown job {v!r}", f"{f}.{side}")
            _check_number(p.lag, f + ".lag", allow_negative=True)
            if p.before == p.after:
                raise InputProblem("precedence_cycle", f"job {p.before!r} precedes itself", f)
        cyc = _find_cycle(block)
        if cyc:
            raise InputProblem("precedence_cycle", "precedence cycle: " + " -> ".join(cyc), "schedule.precedence")
        amounts = [r.capacity for r in block.resources] + [a for j in block.jobs for a in j.needs.values()]
        _decimals_scale(amounts, 3, "schedule capacities and needs")
        _decimals_scale([j.weight for j in block.jobs], 6, "schedule.jobs[].weight")
        _decimals_scale([r.cost_per_unit_time for r in block.resources], 6, "schedule.resources[].cost_per_unit_time")
        if horizon(block) > 10**9:
            raise InputProblem("bad_magnitude", "the schedule horizon exceeds 1e9 time units", "schedule")

    # -------------------------------------------------------- sizes, price
    def estimate_variables(self, block: ScheduleBlock) -> int:
        windows = sum(len(r.calendar or []) for r in block.resources)
        span = horizon(block) - min([j.release for j in block.jobs] + [0])
        return len(block.jobs) * (3 + len(block.resources)) + len(block.precedence) + windows + span

    def size(self, block: ScheduleBlock) -> dict[str, int]:
        return {
            "jobs": len(block.jobs),
            "resources": len(block.resources),
            "precedence": len(block.precedence),
            "calendar_windows": sum(len(r.calendar or []) for r in block.resources),
            "horizon": horizon(block),
        }

    def price_units(self, block: ScheduleBlock) -> int:
        return self.estimate_variables(block)

    # -------------------------------------------------------- objective
    def objective(self, block: ScheduleBlock, solution: dict[str, Any]) -> float:
        from .schedule_check import objective

        return objective(block, solution)

    # -------------------------------------------------------- solve
    def solve(self, block: ScheduleBlock, time_limit_s: float) -> Outcome:

        return schedule_model.solve(block, time_limit_s)

    # -------------------------------------------------------- check
    def check(self, block: ScheduleBlock, solution: dict[str, Any]) -> list[Check]:

        return schedule_check.check(block, solution)


def _find_cycle(block: ScheduleBlock) -> list[str] | None:
    succ: dict[str, list[str]] = {j.id: [] for j in block.jobs}
    for p in block.precedence:
        succ[p.before].append(p.after)
    color: dict[str, int] = {k: 0 for k in succ}
    parent: dict[str, str] = {}
    for root in succ:
        if color[root]:
            continue
        stack = [(root, iter(succ[root]))]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                continue
            if color[nxt] == 1:
                cyc = [nxt]
                cur = node
                while cur != nxt:
                    cyc.append(cur)
                    cur = parent[cur]
                cyc.append(nxt)
                return list(reversed(cyc))
            if color[nxt] == 0:
                color[nxt] = 1
                parent[nxt] = node
                stack.append((nxt, iter(succ[nxt])))
    return None


family = ScheduleFamily()

# load the model (and OR-Tools) with the family, not on the first solve
from . import schedule_check, schedule_model  # noqa: E402,F401
