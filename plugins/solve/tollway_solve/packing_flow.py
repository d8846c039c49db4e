"""One-dimensional bin packing: the arc-flow graph, its CP-SAT model and the search over it."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from ortools.sat.python import cp_model

from .packing_relax import first_fit_decreasing, l2_bound, lp_round


@dataclasses.dataclass
class Graph:
    """Arcs (tail, head, kind) over partial loads 0..cap; kind -1 is a loss arc to the sink."""

    cap: int
    arcs: list[tuple[int, int, int]]
    sink: int

    @property
    def size(self) -> int:
        return len(self.arcs) + 1


def graph(cap: int, kinds: list[tuple[int, int]], limit: int) -> Graph | None:
    """The arc-flow graph for kinds (size, demand), items placed in non-increasing size order
    along a bin's path; None when it would have more than `limit` arcs."""
    reach = {0}
    arcs: list[tuple[int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    steps = 0  # nodes visited: bounded too, since many visits may add no arc
    for k in sorted(range(len(kinds)), key=lambda k: -kinds[k][0]):
        w, d = kinds[k]
        if w <= 0 or d <= 0:
            continue
        new: set[int] = set()
        for p in sorted(reach):
            steps += 1
            q = p
            for _ in range(d):
                if q + w > cap or (q, k) in seen:
                    break
                seen.add((q, k))
                arcs.append((q, q + w, k))
                new.add(q + w)
                q += w
            if len(arcs) > limit or steps > 10 * limit:
                return None
        reach |= new
    sink = cap + 1
    arcs += [(v, sink, -1) for v in sorted(reach) if v > 0]
    return Graph(cap, arcs, sink) if len(arcs) <= limit else None


def _path(
    g: Graph, load: dict[int, int], kinds: list[tuple[int, int]], by_tail: dict[tuple[int, int], int]
) -> list[int] | None:
    """The arcs a bin holding `load` (kind -> count) follows, or None if the graph lacks one."""
    out, q = [], 0
    for k in sorted(load, key=lambda k: -kinds[k][0]):
        for _ in range(load[k]):
            a = by_tail.get((q, k))
            if a is None:
                return None
            out.append(a)
            q += kinds[k][0]
    a = by_tail.get((q, -1))
    if a is None:
        return None
    out.append(a)
    return out


def solve(
    g: Graph,
    kinds: list[tuple[int, int]],
    lb: int,
    ub: int,
    hint: list[dict[int, int]] | None,
    time_limit_s: float,
    workers: int,
) -> tuple[int, list[dict[int, int]] | None, int]:
    """Minimise the bins (flow out of load 0), at least `lb` and at most `ub`.
    Returns the CP-SAT status, the bins found (kind -> count) and the proven bound."""
    m = cp_model.CpModel()
    z = m.NewIntVar(lb, ub, "bins")
    flow = []
    for tail, _, k in g.arcs:
        top = ub if k < 0 else min(ub, kinds[k][1])
        flow.append(m.NewIntVar(0, top, ""))
    into: dict[int, list[Any]] = {}
    out: dict[int, list[Any]] = {}
    per_kind: dict[int, list[Any]] = {}
    for (tail, head, k), f in zip(g.arcs, flow):
        out.setdefault(tail, []).append(f)
        into.setdefault(head, []).append(f)
        if k >= 0:
            per_kind.setdefault(k, []).append(f)
    m.Add(sum(out.get(0, [])) == z)
    for v in into:
        if v != g.sink:
            m.Add(sum(into[v]) == sum(out.get(v, [])))
    for k, fs in per_kind.items():
        m.Add(sum(fs) == kinds[k][1])
    m.Minimize(z)
    if hint:
        by_tail = {(t, k): i for i, (t, _, k) in enumerate(g.arcs)}
        counts = [0] * len(g.arcs)
        ok = True
        for load in hint:
            path = _path(g, load, kinds, by_tail)
            if path is None:
                ok = False
                break
            for a in path:
                counts[a] += 1
        if ok:
            m.AddHint(z, len(hint))
            for f, c in zip(flow, counts):
                m.AddHint(f, c)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, time_limit_s)
    solver.parameters.num_workers = workers
    solver.parameters.linearization_level = 2
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return status, None, lb
    values = [solver.Value(f) for f in flow]
    return status, _decompose(g, values, kinds), max(lb, round(solver.BestObjectiveBound()))


def _decompose(g: Graph, values: list[int], kinds: list[tuple[int, int]]) -> list[dict[int, int]]:
    """Split the flow into paths from load 0 to the sink: one bin each, extras dropped."""
    out: dict[int, list[int]] = {}
    for i, (tail, _, _) in enumerate(g.arcs):
        if values[i] > 0:
            out.setdefault(tail, []).append(i)
    left = {k: d for k, (_, d) in enumerate(kinds)}
    bins = []
    while out.get(0):
        v, load = 0, {}
        while v != g.sink:
            arcs = out[v]
            a = arcs[-1]
            values[a] -= 1
            if values[a] == 0:
                arcs.pop()
            _, head, k = g.arcs[a]
            if k >= 0 and left[k] > 0:
                load[k] = load.get(k, 0) + 1
                left[k] -= 1
            v = head
        if load:
            bins.append(load)
    return bins


def search(
    g: Graph,
    kinds: list[tuple[int, int]],
    lb: int,
    ub: int,
    best: list[dict[int, int]] | None,
    time_limit_s: float,
    workers: int,
) -> tuple[int, list[dict[int, int]] | None, int]:
    """Bound, improve, prove, stopping as soon as a packing meets the bound: the relaxation's
    bound and its whole paths, the few units they leave solved exactly on their own, then the
    whole model from the best packing so far. `best` is a known packing (e.g. the greedy one).
    Returns the CP-SAT status (OPTIMAL when proven), the best packing and the bound."""
    started = time.monotonic()

    def left() -> float:
        return time_limit_s - (time.monotonic() - started)

    def better(bins: list[dict[int, int]] | None) -> None:
        nonlocal best
        if bins is not None and len(bins) <= ub and (best is None or len(bins) < len(best)):
            best = bins

    relaxed = lp_round(g, kinds, 0.3 * time_limit_s)
    if relaxed is not None:
        lp_bound, whole, rest = relaxed
        lb = max(lb, lp_bound)
        if lb > ub:
            return cp_model.INFEASIBLE, None, lb
        residual = [(w, rest.get(k, 0)) for k, (w, _) in enumerate(kinds)]
        better(first_fit_decreasing(g.cap, residual, whole))
        if best is not None and len(best) > lb and any(q for _, q in residual):
            rg = graph(g.cap, residual, len(g.arcs))
            alone = first_fit_decreasing(g.cap, residual)
            if rg is not None and left() > 0.2:
                _, bins, _ = solve(
                    rg, residual, max(1, l2_bound(g.cap, residual)), len(alone), alone, min(0.3 * left(), 5.0), workers
                )
                if bins is not None:
                    better(whole + bins)
    if best is not None and len(best) <= lb:
        return cp_model.OPTIMAL, best, lb
    code, bins, bound = solve(g, kinds, lb, ub if best is None else len(best), best, max(0.1, left()), workers)
    better(bins)
    bound = max(lb, bound)
    if best is not None and (code == cp_model.OPTIMAL or len(best) <= bound):
        return cp_model.OPTIMAL, best, max(bound, len(best)) if code == cp_model.OPTIMAL else bound
    if best is None:
        return code, None, bound
    return cp_model.FEASIBLE, best, bound
