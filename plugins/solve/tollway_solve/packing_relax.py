"""One-dimensional bin packing bounds and packings without search: Martello–Toth L2, the arc-flow relaxation, first fit decreasing."""

from __future__ import annotations

import bisect
import math
from typing import Any

from ortools.linear_solver import pywraplp


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


def lp_round(
    g: Any, kinds: list[tuple[int, int]], time_limit_s: float
) -> tuple[int, list[dict[int, int]], dict[int, int]] | None:
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


def first_fit_decreasing(
    cap: int, kinds: list[tuple[int, int]], bins: list[dict[int, int]] | None = None
) -> list[dict[int, int]]:
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
