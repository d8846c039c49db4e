"""One-dimensional bin packing: the Martello–Toth L2 lower bound and the arc-flow CP-SAT model."""
from __future__ import annotations

import bisect
import dataclasses
import math
import time
from typing import Any

from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model


def l2_bound(cap: int, pairs: list[tuple[int, int]]) -> int:
    """The L2 bound of Martello and Toth for items (size, count) in bins of capacity `cap`.

    For each threshold K (0 and every size up to cap/2): the items larger than cap - K each
    need a bin of their own; those larger than cap/2 (and at most cap - K) each need a bin too;
    the items from K to cap/2 fill what those medium bins leave free, then whole new bins."""
    items = sorted((w, c) for w, c in pairs if w > 0 and c > 0)
    if not items or cap <= 0:
        return 0
    sizes = [w for w, _ in items]
    cnt, tot = [0], [0]
    for w, c in items:
        cnt.append(cnt[-1] + c)
        tot.append(tot[-1] + w * c)

    def between(lo: int, hi: int) -> tuple[int, int]:
        """Count and total size of the items with lo < size <= hi."""
        i, j = bisect.bisect_right(sizes, lo), bisect.bisect_right(sizes, hi)
        return (cnt[j] - cnt[i], tot[j] - tot[i]) if j > i else (0, 0)

    half = cap // 2  # size <= half  <=>  2 * size <= cap
    best = -(-tot[-1] // cap)
    for k in {0, *(w for w in sizes if w <= half)}:
        n1, _ = between(cap - k, cap)
        n2, s2 = between(half, cap - k)
        _, s3 = between(k - 1, half)
        rest = s3 - (n2 * cap - s2)
        best = max(best, n1 + n2 + max(0, -(-rest // cap)))
    return best


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


def _path(g: Graph, load: dict[int, int], kinds: list[tuple[int, int]], by_tail: dict[tuple[int, int], int]) -> list[int] | None:
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


def solve(g: Graph, kinds: list[tuple[int, int]], lb: int, ub: int, hint: list[dict[int, int]] | None,
          time_limit_s: float, workers: int) -> tuple[int, list[dict[int, int]] | None, int]:
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


def lp_round(g: Graph, kinds: list[tuple[int, int]], time_limit_s: float) -> tuple[int, list[dict[int, int]], dict[int, int]] | None:
    """The arc-flow linear relaxation (GLOP): its optimum rounded up is a lower bound (the
    tolerance only ever weakens it); its paths, each taken a whole number of times, are bins,
    and the units they leave (kind -> count) a small residual problem. None when unsolved."""
    lp = pywraplp.Solver.CreateSolver("GLOP")
    if lp is None:
        return None
    lp.SetTimeLimit(max(100, int(time_limit_s * 1000)))
    flow = [lp.NumVar(0, lp.infinity(), "") for _ in g.arcs]
    into: dict[int, list[Any]] = {}
    out: dict[int, list[Any]] = {}
    per_kind: dict[int, list[Any]] = {}
    for (tail, head, k), f in zip(g.arcs, flow):
        out.setdefault(tail, []).append(f)
        into.setdefault(head, []).append(f)
        if k >= 0:
            per_kind.setdefault(k, []).append(f)
    for v in into:
        if v != g.sink:
            lp.Add(lp.Sum(into[v]) == lp.Sum(out.get(v, [])))
    for k, fs in per_kind.items():
        lp.Add(lp.Sum(fs) >= kinds[k][1])
    lp.Minimize(lp.Sum(out.get(0, [])))
    if lp.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    value = lp.Objective().Value()
    bound = math.ceil(value - 1e-4 * max(1.0, value))
    residual = [f.solution_value() for f in flow]
    paths: dict[int, list[int]] = {}
    for i, (tail, _, _) in enumerate(g.arcs):
        if residual[i] > 1e-9:
            paths.setdefault(tail, []).append(i)
    left = {k: d for k, (_, d) in enumerate(kinds)}
    bins: list[dict[int, int]] = []
    while True:  # peel paths off the fractional flow; keep each whole number of times
        v, path = 0, []
        while v != g.sink:
            arcs = [a for a in paths.get(v, []) if residual[a] > 1e-9]
            if not arcs:
                break
            a = max(arcs, key=lambda a: residual[a])
            path.append(a)
            v = g.arcs[a][1]
        if v != g.sink:
            break
        amount = min(residual[a] for a in path)
        for a in path:
            residual[a] -= amount
        for _ in range(int(amount + 1e-9)):
            load: dict[int, int] = {}
            for a in path:
                k = g.arcs[a][2]
                if k >= 0 and left[k] > 0:
                    load[k] = load.get(k, 0) + 1
                    left[k] -= 1
            if load:
                bins.append(load)
    return bound, bins, left


def first_fit_decreasing(cap: int, kinds: list[tuple[int, int]], bins: list[dict[int, int]] | None = None) -> list[dict[int, int]]:
    """Adds kinds (size, count) to `bins` (or new ones) first fit decreasing."""
    bins = [dict(b) for b in bins or []]
    room = [cap - sum(kinds[k][0] * c for k, c in b.items()) for b in bins]
    for k in sorted(range(len(kinds)), key=lambda k: -kinds[k][0]):
        w, left = kinds[k]
        i = 0
        while left > 0:
            while i < len(room) and room[i] < w:
                i += 1
            if i == len(room):
                bins.append({})
                room.append(cap)
            take = min(left, room[i] // w) if w else left
            bins[i][k] = bins[i].get(k, 0) + take
            room[i] -= take * w
            left -= take
    return bins


def search(g: Graph, kinds: list[tuple[int, int]], lb: int, ub: int, best: list[dict[int, int]] | None,
           time_limit_s: float, workers: int) -> tuple[int, list[dict[int, int]] | None, int]:
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
                _, bins, _ = solve(rg, residual, max(1, l2_bound(g.cap, residual)), len(alone), alone,
                                   min(0.3 * left(), 5.0), workers)
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
