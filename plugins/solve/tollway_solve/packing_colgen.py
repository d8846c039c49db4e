"""One-dimensional bin packing too large for the arc-flow graph: Gilmore–Gomory column
generation for the bound (Farley's, valid at every iteration) and the integer master over
the generated patterns for the packing."""

from __future__ import annotations

import math
import time
from typing import Any

from ortools.algorithms.python import knapsack_solver
from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

Pattern = dict[int, int]  # kind -> units in one bin
PRICE_SCALE = 1_000_000  # duals are priced as integers in millionths
DP_WORK = 50_000_000  # units x capacity a knapsack by dynamic programming may take
SEEDS = 60  # first units tried by the cheap pricing
SMOOTH = 0.5  # weight of the best duals so far in the duals priced


def _price(cap: int, kinds: list[tuple[int, int]], duals: list[float], limit_s: float) -> tuple[Pattern, float]:
    """The pattern of largest dual value (units expanded to 0-1 items, duals floored to
    millionths) and an upper bound on the exact largest dual value of any pattern."""
    units: list[int] = []
    for k, (w, d) in enumerate(kinds):
        if duals[k] > 0 and w <= cap:
            units += [k] * min(d, cap // w)
    if not units:
        return {}, 0.0
    if len(units) * cap > DP_WORK:
        return {}, math.inf  # too large to price exactly: no bound
    profits = [math.floor(duals[k] * PRICE_SCALE) for k in units]
    solver = knapsack_solver.KnapsackSolver(knapsack_solver.SolverType.KNAPSACK_DYNAMIC_PROGRAMMING_SOLVER, "price")
    solver.init(profits, [[kinds[k][0] for k in units]], [cap])
    solver.set_time_limit(max(0.01, limit_s))
    best = solver.solve()
    if not solver.is_solution_optimal():
        return {}, math.inf
    pattern: Pattern = {}
    for i, k in enumerate(units):
        if solver.best_solution_contains(i):
            pattern[k] = pattern.get(k, 0) + 1
    most = max(1, cap // max(1, min(kinds[k][0] for k in units)))  # units one bin can hold
    return pattern, (best + most) / PRICE_SCALE  # flooring cost each unit under one millionth


def _greedy_columns(cap: int, kinds: list[tuple[int, int]], duals: list[float], most: int) -> list[Pattern]:
    """Cheap pricing: from each kind as the first unit, fill by dual value per size; the
    patterns worth more than one bin, best first."""
    order = sorted(
        (k for k, (w, d) in enumerate(kinds) if duals[k] > 0 and 0 < w <= cap and d > 0),
        key=lambda k: -duals[k] / kinds[k][0],
    )
    found: dict[tuple[tuple[int, int], ...], float] = {}
    for first in order[:SEEDS]:
        room, p = cap - kinds[first][0], {first: 1}
        for k in order:
            w, d = kinds[k]
            n = min(d - p.get(k, 0), room // w)
            if n > 0:
                p[k] = p.get(k, 0) + n
                room -= n * w
        value = sum(duals[k] * c for k, c in p.items())
        if value > 1 + 1e-9:
            found[tuple(sorted(p.items()))] = value
    best = sorted(found, key=lambda key: -found[key])[:most]
    return [dict(key) for key in best]


def generate(
    cap: int, kinds: list[tuple[int, int]], start: list[Pattern], time_limit_s: float, target: int = 1 << 62
) -> tuple[int, list[Pattern]]:
    """Column generation from the patterns `start`: the best bound found (Farley's: the
    duals' total over the largest pattern value) and every pattern generated."""
    started = time.monotonic()
    lp = pywraplp.Solver.CreateSolver("GLOP")
    rows = [lp.Constraint(d, lp.infinity()) for _, d in kinds]
    patterns: list[Pattern] = []
    objective = lp.Objective()
    objective.SetMinimization()

    def add(p: Pattern) -> None:
        x = lp.NumVar(0, lp.infinity(), "")
        objective.SetCoefficient(x, 1)
        for k, c in p.items():
            rows[k].SetCoefficient(x, c)
        patterns.append(p)

    seen: set[tuple[tuple[int, int], ...]] = set()
    for p in start + [{k: min(d, cap // w)} for k, (w, d) in enumerate(kinds) if 0 < w <= cap and d > 0]:
        key = tuple(sorted(p.items()))
        if p and key not in seen:
            seen.add(key)
            add(p)
    # dual-optimal inequalities (Ben Amor, Desrosiers and Valério de Carvalho): a larger unit may
    # stand in for a smaller one, so the duals never fall as sizes grow; the master's value stays
    sized = sorted((k for k, (w, d) in enumerate(kinds) if 0 < w <= cap and d > 0), key=lambda k: -kinds[k][0])
    for big, small in zip(sized, sized[1:]):
        x = lp.NumVar(0, lp.infinity(), "")
        rows[big].SetCoefficient(x, -1)
        rows[small].SetCoefficient(x, 1)
    bound = 0
    center: list[float] | None = None  # the duals of the best Farley value so far
    best_value = 0.0
    while bound < target:
        left = time_limit_s - (time.monotonic() - started)
        if left < 0.05:
            break
        lp.SetTimeLimit(int(left * 1000))
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            break
        duals = [max(0.0, r.dual_value()) for r in rows]
        cheap = [p for p in _greedy_columns(cap, kinds, duals, 20) if tuple(sorted(p.items())) not in seen]
        for p in cheap:
            seen.add(tuple(sorted(p.items())))
            add(p)
        # exact pricing at duals smoothed toward the center (Wentges): fewer rounds to a bound;
        # Farley's bound holds at any duals, the column is kept when it prices out at the master's
        priced = [] if center is None else [SMOOTH * c + (1 - SMOOTH) * d for c, d in zip(center, duals)]
        added = False
        for at in (priced, duals):
            if not at:
                continue
            pattern, top = _price(cap, kinds, at, left)
            if top == math.inf or not pattern:
                return bound, patterns
            value = sum(y * d for y, (_, d) in zip(at, kinds)) / max(top, 1e-12)
            if value > best_value:
                best_value, center = value, at
            bound = max(bound, math.ceil(value - 1e-6))
            key = tuple(sorted(pattern.items()))
            if sum(duals[k] * c for k, c in pattern.items()) > 1 + 1e-9 and key not in seen:
                seen.add(key)
                add(pattern)
                added = True
                break  # priced out at the master's duals: no need to price them
        if not added and not cheap:
            break  # no pattern prices out: the master's optimum is the bound
    return bound, patterns


def integer_master(
    kinds: list[tuple[int, int]], patterns: list[Pattern], lb: int, ub: int, time_limit_s: float, workers: int
) -> list[Pattern] | None:
    """Fewest patterns covering every demand (surplus units dropped), at most `ub - 1` bins."""
    m = cp_model.CpModel()
    xs = [m.NewIntVar(0, ub, "") for _ in patterns]
    cover: dict[int, list[Any]] = {}
    for x, p in zip(xs, patterns):
        for k, c in p.items():
            cover.setdefault(k, []).append(c * x)
    for k, (_, d) in enumerate(kinds):
        if d > 0:
            m.Add(sum(cover.get(k, [])) >= d)
    used = sum(xs)
    m.Add(used >= lb)
    m.Add(used <= ub - 1)
    m.Minimize(used)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, time_limit_s)
    solver.parameters.num_workers = workers
    if solver.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    left = {k: d for k, (_, d) in enumerate(kinds)}
    bins: list[Pattern] = []
    for x, p in zip(xs, patterns):
        for _ in range(solver.Value(x)):
            load = {}
            for k, c in p.items():
                take = min(c, left[k])
                if take:
                    load[k] = take
                    left[k] -= take
            if load:
                bins.append(load)
    return bins


def min_slack(cap: int, kinds: list[tuple[int, int]], time_limit_s: float) -> list[Pattern] | None:
    """Minimum bin slack (Gupta and Ho; Fleszar and Hindi's variant): bin after bin, the
    largest unit left and the subset of the others that fills the bin the most (an exact
    subset sum); None when the time runs out first."""
    started = time.monotonic()
    left = {k: d for k, (w, d) in enumerate(kinds) if w > 0 and d > 0}
    bins: list[Pattern] = []
    while left:
        if time.monotonic() - started > time_limit_s:
            return None
        first = max(left, key=lambda k: kinds[k][0])
        room = cap - kinds[first][0]
        load = {first: 1}
        units = [k for k, d in left.items() for _ in range(min(d - (k == first), room // kinds[k][0]))]
        if len(units) * room > DP_WORK:
            return None  # too large for an exact subset sum
        if units and room > 0:
            solver = knapsack_solver.KnapsackSolver(
                knapsack_solver.SolverType.KNAPSACK_DYNAMIC_PROGRAMMING_SOLVER, "slack"
            )
            weights = [kinds[k][0] for k in units]
            solver.init(weights, [weights], [room])
            solver.solve()
            for i, k in enumerate(units):
                if solver.best_solution_contains(i):
                    load[k] = load.get(k, 0) + 1
        for k, c in load.items():
            left[k] -= c
            if left[k] == 0:
                del left[k]
        bins.append(load)
    return bins
