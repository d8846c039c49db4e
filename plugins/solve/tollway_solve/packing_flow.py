"""One-dimensional bin packing: the Martello–Toth L2 lower bound and the arc-flow CP-SAT model."""
from __future__ import annotations

import bisect
import dataclasses
from typing import Any

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
