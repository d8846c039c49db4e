"""OR-Tools routing model for the routing family (semantics in routing.py).

Search, chosen by measurement on Solomon C101/R101 and Augerat A-n32-k5:
* first solution: several construction strategies are tried briefly (parallel cheapest
  insertion, savings, path cheapest arc) and the cheapest complete one is kept;
* vehicles_then_distance: a fixed cost per vehicle above any total distance, then route
  elimination - repeatedly remove the shortest route, cap the active vehicles one lower and let
  guided local search reinsert its stops (stops may be dropped at a huge penalty, so "all
  reinserted" means one vehicle fewer; each attempt gets a quarter of the time left); then
* guided local search (default lambda 0.1; 0.05 and 0.3 measured worse on R101) for the
  remaining time, on distance alone with the vehicle count as a hard cap.
Measured at 30 s on this 2-core machine: C101 10 / 828.94, R101 19 / 1668.36, A-n32-k5 784.
Travel times are rounded up and windows inward on the integer grid, so the exact replay of
a model solution in input units never breaks a window or shift.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from ortools.constraint_solver import pywrapcp, routing_enums_pb2

from .family import Conflict, ConflictConstraint, Outcome, status_of
from .routing_block import RoutingBlock, amount_scale, location_ids, matrices
from .routing_check import objective

FSS = routing_enums_pb2.FirstSolutionStrategy
LSM = routing_enums_pb2.LocalSearchMetaheuristic


def _scale(maxval: float, count: int, cap: int = 1000) -> int:
    s = cap
    while s > 1 and maxval * s * max(1, count) > 1e12:
        s //= 10
    return s


class _Model:
    def __init__(self, block: RoutingBlock) -> None:
        self.block = block
        ids = location_ids(block)
        pos = {x: i for i, x in enumerate(ids)}
        d, t = matrices(block)
        self.d, self.t = d, t
        S, V = len(block.stops), len(block.vehicles)
        self.S, self.V = S, V
        # nodes: stops 0..S-1, then vehicle starts S..S+V-1, then vehicle ends S+V..S+2V-1
        loc = [pos[s.location.id] for s in block.stops]
        loc += [pos[v.start.id] for v in block.vehicles]
        loc += [pos[(v.end or v.start).id] for v in block.vehicles]
        self.loc = loc
        N = len(loc)
        service = [s.service for s in block.stops] + [0.0] * (2 * V)
        L = np.array(loc)
        D = np.array(d, dtype=float)[np.ix_(L, L)]
        T = np.array(t, dtype=float)[np.ix_(L, L)]
        self.SD = _scale(float(D.max(initial=0)), N)
        times = [w.end for s in block.stops for w in (s.windows or [])]
        times += [v.shift.end for v in block.vehicles if v.shift]
        self.ST = _scale(max([float(T.max(initial=0)) + max(service)] + times), N)
        Di = np.rint(D * self.SD).astype(np.int64)
        Ti = np.ceil((T + np.array(service)[:, None]) * self.ST - 1e-9).astype(np.int64)
        for k in range(V):  # an unused vehicle does not move: its empty route costs nothing
            Di[S + k][S + V + k] = 0
            Ti[S + k][S + V + k] = 0
        self.Di, self.Ti = Di, Ti
        # latest window/shift end plus every node's longest leg: bounds any useful route end
        self.H = int(Ti.max(axis=1).sum()) + 1 + (int(math.floor(max(times) * self.ST)) if times else 0)
        self.amt = amount_scale(block)

    def build(self, max_vehicles: int | None = None, vehicle_cost: int = 0):
        b = self.block
        S, V = self.S, self.V
        starts = list(range(S, S + V))
        ends = list(range(S + V, S + 2 * V))
        mgr = pywrapcp.RoutingIndexManager(S + 2 * V, V, starts, ends)
        rm = pywrapcp.RoutingModel(mgr)
        # matrices indexed by node; OR-Tools wants them by node too for RegisterTransitMatrix
        dist_cb = rm.RegisterTransitMatrix(self.Di.tolist())
        time_cb = rm.RegisterTransitMatrix(self.Ti.tolist())
        if b.objective == "time":
            rm.SetArcCostEvaluatorOfAllVehicles(time_cb)
        else:
            rm.SetArcCostEvaluatorOfAllVehicles(dist_cb)
        demand = [int(round(s.demand * self.amt)) for s in b.stops] + [0] * (2 * V)
        dem_cb = rm.RegisterUnaryTransitVector(demand)
        rm.AddDimensionWithVehicleCapacity(
            dem_cb, 0, [int(round(v.capacity * self.amt)) for v in b.vehicles], True, "load"
        )
        rm.AddDimension(time_cb, self.H, self.H, False, "time")
        td = rm.GetDimensionOrDie("time")
        if b.objective == "time":
            td.SetSpanCostCoefficientForAllVehicles(1)
        for i, s in enumerate(b.stops):
            if s.windows:
                ws = sorted((w.start, w.end) for w in s.windows)
                grid = [(math.ceil(a * self.ST - 1e-9), math.floor(c * self.ST + 1e-9)) for a, c in ws]
                grid = [(a, c) for a, c in grid if a <= c]
                idx = mgr.NodeToIndex(i)
                if not grid:  # no grid point inside any window (the model failed outright): left unserved
                    rm.ActiveVar(idx).SetValue(0)
                    continue
                td.CumulVar(idx).SetRange(grid[0][0], grid[-1][1])
                for (a0, c0), (a1, c1) in zip(grid, grid[1:]):
                    if c0 + 1 <= a1 - 1:
                        td.CumulVar(idx).RemoveInterval(c0 + 1, a1 - 1)
        for k, v in enumerate(b.vehicles):
            if v.shift:
                td.CumulVar(rm.Start(k)).SetMin(math.ceil(v.shift.start * self.ST - 1e-9))
                td.CumulVar(rm.End(k)).SetMax(math.floor(v.shift.end * self.ST + 1e-9))
            rm.AddVariableMaximizedByFinalizer(td.CumulVar(rm.Start(k)))
            rm.AddVariableMinimizedByFinalizer(td.CumulVar(rm.End(k)))
        if vehicle_cost:
            rm.SetFixedCostOfAllVehicles(vehicle_cost)
        if max_vehicles is not None:
            rm.SetMaximumNumberOfActiveVehicles(max_vehicles)
        penalty = self.drop_penalty(vehicle_cost)
        for i in range(S):
            rm.AddDisjunction([mgr.NodeToIndex(i)], penalty)
        return mgr, rm

    def big_m(self) -> int:
        """More than any total distance: makes one vehicle outweigh all distance."""
        return int(self.Di.max(axis=1).sum()) + 1

    def drop_penalty(self, vehicle_cost: int) -> int:
        arc = self.Ti if self.block.objective == "time" else self.Di
        base = int(arc.max(axis=1).sum()) * (3 if self.block.objective == "time" else 1) + 1
        return 10 * (base + vehicle_cost * 2)

    def routes_of(self, mgr, rm, sol) -> list[list[int]]:
        out = []
        for k in range(self.V):
            idx = rm.Start(k)
            nodes = []
            idx = sol.Value(rm.NextVar(idx))
            while not rm.IsEnd(idx):
                nodes.append(mgr.IndexToNode(idx))
                idx = sol.Value(rm.NextVar(idx))
            out.append(nodes)
        return out

    def start_times(self, mgr, rm, sol) -> list[int]:
        td = rm.GetDimensionOrDie("time")
        return [sol.Value(td.CumulVar(rm.Start(k))) for k in range(self.V)]


def _params(seconds: float, fss, meta=LSM.GUIDED_LOCAL_SEARCH):
    p = pywrapcp.DefaultRoutingSearchParameters()
    p.first_solution_strategy = fss
    p.local_search_metaheuristic = meta
    p.time_limit.FromMilliseconds(max(10, int(seconds * 1000)))
    return p


def replay(block: RoutingBlock, m: _Model, routes: list[list[int]], starts: list[int]) -> dict[str, Any]:
    """Exact (input-unit) times for the model's routes, leaving at the model's start time."""
    out = []
    served = set()
    for k, nodes in enumerate(routes):
        if not nodes:
            continue
        v = block.vehicles[k]
        t0 = starts[k] / m.ST
        if v.shift:
            t0 = max(t0, v.shift.start)
        cur_loc = m.loc[m.S + k]
        clock = t0
        load = 0.0
        dist = 0.0
        rows = []
        for n in nodes:
            s = block.stops[n]
            arr = clock + m.t[cur_loc][m.loc[n]]
            dist += m.d[cur_loc][m.loc[n]]
            begin = arr
            if s.windows:
                for w in sorted(s.windows, key=lambda w: w.start):
                    if arr <= w.end + 1e-9:
                        begin = max(arr, w.start)
                        break
            dep = begin + s.service
            load += s.demand
            rows.append({"id": s.id, "arrival": arr, "departure": dep, "load_after": load})
            served.add(n)
            clock = dep
            cur_loc = m.loc[n]
        end_loc = m.loc[m.S + m.V + k]
        t_end = clock + m.t[cur_loc][end_loc]
        dist += m.d[cur_loc][end_loc]
        out.append(
            {"vehicle": v.id, "start_time": t0, "end_time": t_end, "stops": rows, "distance": dist, "time": t_end - t0}
        )
    unserved = [s.id for i, s in enumerate(block.stops) if i not in served]
    return {"routes": out, "unserved": unserved}


def _precheck(block: RoutingBlock, m: _Model) -> list[Conflict]:
    out = []
    caps = max(v.capacity for v in block.vehicles)
    for s in block.stops:
        if s.demand > caps + 1e-12:
            out.append(
                Conflict(
                    [
                        ConflictConstraint("demand", s.id, f"stop {s.id} needs {s.demand}"),
                        ConflictConstraint(
                            "capacity",
                            ",".join(v.id for v in block.vehicles),
                            f"the largest vehicle capacity is {caps}",
                        ),
                    ],
                    f"stop {s.id} needs more than any vehicle carries",
                )
            )
    # shortest travel times (a valid lower bound on any path's travel time)
    T = np.array(m.t, dtype=float)
    for k in range(T.shape[0]):
        T = np.minimum(T, T[:, k : k + 1] + T[k : k + 1, :])
    for si, s in enumerate(block.stops):
        if not s.windows and not any(v.shift for v in block.vehicles):
            continue
        ok = False
        sl = m.loc[si]
        for k, v in enumerate(block.vehicles):
            st = m.loc[m.S + k]
            en = m.loc[m.S + m.V + k]
            t0 = v.shift.start if v.shift else 0.0
            arr = t0 + T[st][sl]
            begins = []
            if s.windows:
                for w in s.windows:
                    if arr <= w.end + 1e-9:
                        begins.append(max(arr, w.start))
            else:
                begins.append(arr)
            for bgn in begins:
                back = bgn + s.service + T[sl][en]
                if v.shift is None or back <= v.shift.end + 1e-9:
                    ok = True
                    break
            if ok:
                break
        if not ok:
            cons = [ConflictConstraint("window", s.id, f"stop {s.id} service windows")]
            cons += [
                ConflictConstraint("shift", v.id, f"vehicle {v.id} shift and travel times") for v in block.vehicles
            ]
            out.append(Conflict(cons, f"no vehicle can reach stop {s.id} inside its windows and shift"))
    return out


def _cost(m: _Model, routes: list[list[int]], vehicle_cost: int) -> tuple[int, int, int]:
    """(vehicles, distance) on the integer grid, for comparing candidates."""
    used = [k for k, r in enumerate(routes) if r]
    dist = 0
    for k in used:
        path = [m.S + k] + routes[k] + [m.S + m.V + k]
        dist += int(sum(m.Di[a][b] for a, b in zip(path, path[1:])))
    dropped = m.S - sum(len(r) for r in routes)
    return dropped, len(used), dist


def solve(block: RoutingBlock, time_limit_s: float) -> Outcome:
    t_end = time.monotonic() + max(0.5, time_limit_s - 0.5)
    m = _Model(block)
    pre = _precheck(block, m)
    if pre:
        return Outcome("infeasible", None, None, None, None, conflicts=pre, conflicts_complete=True)
    lex = block.objective == "vehicles_then_distance"
    vcost = m.big_m() if lex else 0
    mgr, rm = m.build(vehicle_cost=vcost)
    nvars = rm.Size() + rm.vehicles() * 2

    def left() -> float:
        return t_end - time.monotonic()

    # 1. construction: try a few strategies briefly, keep the best complete one
    best = None
    budget = min(left() * 0.15, 6.0)
    strategies = [FSS.PARALLEL_CHEAPEST_INSERTION, FSS.SAVINGS, FSS.PATH_CHEAPEST_ARC]
    for fss in strategies:
        if left() <= 0.2:
            break
        mgr, rm = m.build(vehicle_cost=vcost)
        p = _params(max(0.05, budget / len(strategies)), fss, LSM.GREEDY_DESCENT)
        sol = rm.SolveWithParameters(p)
        if sol is None:
            continue
        routes = m.routes_of(mgr, rm, sol)
        key = _cost(m, routes, vcost)
        key = key if lex else (key[0], key[2])
        if best is None or key < best[0]:
            best = (key, routes, m.start_times(mgr, rm, sol))
    if best is None:
        return Outcome(
            status_of(proven=False, found=False, out_of_time=True), None, None, None, None, variables_built=nvars
        )

    # 2. route elimination (vehicles first)
    if lex:
        while left() > 1.0:
            routes = best[1]
            used = [k for k, r in enumerate(routes) if r]
            if len(used) <= 1 or best[0][0] > 0:
                break
            target = len(used) - 1
            shortest = min(used, key=lambda k: len(routes[k]))
            init = [list(r) if k != shortest else [] for k, r in enumerate(routes)]
            mgr, rm = m.build(max_vehicles=target, vehicle_cost=vcost)
            rm.CloseModelWithParameters(_params(1, FSS.PARALLEL_CHEAPEST_INSERTION))
            init_a = rm.ReadAssignmentFromRoutes([[mgr.NodeToIndex(n) for n in r] for r in init], True)
            p = _params(max(1.0, left() * 0.25), FSS.PARALLEL_CHEAPEST_INSERTION)
            sol = rm.SolveFromAssignmentWithParameters(init_a, p) if init_a else None
            if sol is None:
                break
            r2 = m.routes_of(mgr, rm, sol)
            k2 = _cost(m, r2, vcost)
            if k2[0] == 0 and k2[1] <= target:
                best = (k2, r2, m.start_times(mgr, rm, sol))
            else:
                break

    # 3. guided local search on the final objective
    if left() > 0.3:
        nveh = sum(1 for r in best[1] if r)
        # vehicles_then_distance: the count is now a hard cap, so the objective is the distance
        # alone (a huge fixed cost would swamp guided local search's arc penalties)
        mgr, rm = m.build(max_vehicles=nveh if lex else None)
        rm.CloseModelWithParameters(_params(1, FSS.PARALLEL_CHEAPEST_INSERTION))
        init_a = rm.ReadAssignmentFromRoutes([[mgr.NodeToIndex(n) for n in r] for r in best[1]], True)
        if init_a is not None:
            sol = rm.SolveFromAssignmentWithParameters(init_a, _params(left(), FSS.PARALLEL_CHEAPEST_INSERTION))
            if sol is not None:
                r2 = m.routes_of(mgr, rm, sol)
                k2 = _cost(m, r2, vcost)
                k2 = k2 if lex else (k2[0], k2[2])
                if k2 <= best[0] or block.objective == "time":
                    best = (k2, r2, m.start_times(mgr, rm, sol))

    solution = replay(block, m, best[1], best[2])
    obj = objective(block, solution)
    # guided local search runs until the limit: a complete answer is a timeout's, never a proof
    status = status_of(proven=False, found=not solution["unserved"], out_of_time=True)
    return Outcome(status, obj, None, None, solution, variables_built=nvars)
