"""Packing improvement when no exact model fits: a few bins at a time repacked into one fewer by CP-SAT."""

from __future__ import annotations

import random
import time
from typing import Any

from ortools.sat.python import cp_model

Contents = list[tuple[int, dict[int, int]]]  # (bin type, kind -> count) per opened bin


def improve(
    contents: Contents,
    sizes: list[list[int]],
    caps: list[list[int]],
    clash: dict[int, set[int]],
    lb: int,
    time_limit_s: float,
    workers: int,
    group: int = 8,
) -> tuple[Contents, bool]:
    """Repeatedly takes the emptiest bin with a few others and asks CP-SAT for their items in one
    bin fewer (same bin types, so the quantities still hold). Returns the packing and whether
    the time ran out (False when it reached `lb` or no group could be tried)."""
    started = time.monotonic()
    rng = random.Random(0)
    bins = [(t, dict(load)) for t, load in contents]
    fails = 0
    while len(bins) > lb:
        left = time_limit_s - (time.monotonic() - started)
        if left < 0.05:
            return bins, True
        fill = [_fill(load, t, sizes, caps) for t, load in bins]
        order = sorted(range(len(bins)), key=lambda i: fill[i])
        pool = order[: max(group * 3, 2 * group)]
        chosen = [order[0]] + rng.sample(pool[1:], min(group - 1, len(pool) - 1))
        if len(chosen) < 2 or not _may_drop_one(chosen, bins, sizes, caps):
            fails += 1
            if fails > 50:
                return bins, False  # no group of bins can lose one by size alone
            continue
        new = _repack([bins[i] for i in chosen], sizes, caps, clash, min(left, 0.5), workers)
        if new is None:
            fails += 1
            if fails > 200:
                return bins, True
            continue
        fails = 0
        keep = [b for i, b in enumerate(bins) if i not in set(chosen)]
        bins = keep + new
    return bins, False


def _fill(load: dict[int, int], t: int, sizes: list[list[int]], caps: list[list[int]]) -> float:
    return max(
        (sum(sizes[k][d] * c for k, c in load.items()) / cap for d, cap in enumerate(caps[t]) if cap), default=0.0
    )


def _may_drop_one(chosen: list[int], bins: Contents, sizes: list[list[int]], caps: list[list[int]]) -> bool:
    """The chosen items' total size fits the chosen bins less the smallest, in every dimension."""
    for d in range(len(caps[0])):
        total = sum(sizes[k][d] * c for i in chosen for k, c in bins[i][1].items())
        room = sorted(caps[bins[i][0]][d] for i in chosen)
        if total > sum(room[1:]):
            return False
    return True


def _repack(
    group: Contents,
    sizes: list[list[int]],
    caps: list[list[int]],
    clash: dict[int, set[int]],
    time_limit_s: float,
    workers: int,
) -> Contents | None:
    """The group's items in at most one bin fewer, or None."""
    need: dict[int, int] = {}
    for _, load in group:
        for k, c in load.items():
            need[k] = need.get(k, 0) + c
    m = cp_model.CpModel()
    slots: list[tuple[int, Any, dict[int, Any]]] = []
    for t, _ in group:
        y = m.NewBoolVar("")
        xs = {k: m.NewIntVar(0, c, "") for k, c in need.items()}
        for d, cap in enumerate(caps[t]):
            terms = [sizes[k][d] * x for k, x in xs.items() if sizes[k][d]]
            if terms:
                m.Add(sum(terms) <= cap * y)
        for k, x in xs.items():
            m.Add(x <= need[k] * y)
        for a, others in clash.items():
            for b in others:
                if a < b and a in xs and b in xs:
                    ua, ub = m.NewBoolVar(""), m.NewBoolVar("")
                    m.Add(xs[a] == 0).OnlyEnforceIf(ua.Not())
                    m.Add(xs[b] == 0).OnlyEnforceIf(ub.Not())
                    m.AddBoolOr([ua.Not(), ub.Not()])
        slots.append((t, y, xs))
    for k, c in need.items():
        m.Add(sum(xs[k] for _, _, xs in slots) == c)
    m.Add(sum(y for _, y, _ in slots) <= len(group) - 1)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, time_limit_s)
    solver.parameters.num_workers = workers
    if solver.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    out = [(t, {k: solver.Value(x) for k, x in xs.items() if solver.Value(x)}) for t, _, xs in slots]
    return [(t, load) for t, load in out if load]
