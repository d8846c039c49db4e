"""A plain-library routing baseline for bench/solve.py: OR-Tools routing with one stock start
(parallel cheapest insertion: path-cheapest-arc finds no first solution on Solomon R101) and
guided local search, over the same routing block and time limit (no construction portfolio,
no route elimination, none of the plugin's model)."""

from __future__ import annotations

import math
from typing import Any

from ortools.constraint_solver import pywrapcp, routing_enums_pb2

from tollway_solve.routing_block import RoutingBlock, amount_scale, expand, location_ids, matrices

SCALE = 1000  # distances and times on a grid of a thousandth of a unit


def ortools_gls(block: RoutingBlock, time_limit_s: float) -> dict[str, Any]:
    """{vehicles, distance, objective} of the baseline's best solution serving every stop
    (objective in the block's terms: total distance, or total route time); None values when it
    found none."""
    block = expand(block, most=len(block.stops))
    pos = {x: i for i, x in enumerate(location_ids(block))}
    d, t = matrices(block)
    S, V = len(block.stops), len(block.vehicles)
    nodes = [pos[s.location.id] for s in block.stops]
    nodes += [pos[v.start.id] for v in block.vehicles] + [pos[(v.end or v.start).id] for v in block.vehicles]
    service = [s.service for s in block.stops] + [0.0] * (2 * V)
    mgr = pywrapcp.RoutingIndexManager(len(nodes), V, list(range(S, S + V)), list(range(S + V, S + 2 * V)))
    rm = pywrapcp.RoutingModel(mgr)
    dist = rm.RegisterTransitCallback(
        lambda i, j: round(d[nodes[mgr.IndexToNode(i)]][nodes[mgr.IndexToNode(j)]] * SCALE)
    )
    travel = rm.RegisterTransitCallback(
        lambda i, j: math.ceil(
            (t[nodes[mgr.IndexToNode(i)]][nodes[mgr.IndexToNode(j)]] + service[mgr.IndexToNode(i)]) * SCALE
        )
    )
    rm.SetArcCostEvaluatorOfAllVehicles(travel if block.objective == "time" else dist)
    amt = amount_scale(block)
    demand = [round(s.demand * amt) for s in block.stops] + [0] * (2 * V)
    load = rm.RegisterUnaryTransitCallback(lambda i: demand[mgr.IndexToNode(i)])
    rm.AddDimensionWithVehicleCapacity(load, 0, [round(v.capacity * amt) for v in block.vehicles], True, "load")
    ends = [w.end for s in block.stops for w in s.windows or []] + [v.shift.end for v in block.vehicles if v.shift]
    horizon = math.ceil((max(ends, default=0) + sum(max(r) for r in t) + sum(service)) * SCALE) + 1
    rm.AddDimension(travel, horizon, horizon, False, "time")
    td = rm.GetDimensionOrDie("time")
    if block.objective == "time":
        td.SetSpanCostCoefficientForAllVehicles(1)
    for i, s in enumerate(block.stops):
        if s.windows:
            ws = sorted((math.ceil(w.start * SCALE), math.floor(w.end * SCALE)) for w in s.windows)
            cv = td.CumulVar(mgr.NodeToIndex(i))
            cv.SetRange(ws[0][0], ws[-1][1])
            for (_, c0), (a1, _) in zip(ws, ws[1:]):
                if c0 + 1 <= a1 - 1:
                    cv.RemoveInterval(c0 + 1, a1 - 1)
    for k, v in enumerate(block.vehicles):
        if v.shift:
            td.CumulVar(rm.Start(k)).SetMin(math.ceil(v.shift.start * SCALE))
            td.CumulVar(rm.End(k)).SetMax(math.floor(v.shift.end * SCALE))
    if block.objective == "vehicles_then_distance":
        rm.SetFixedCostOfAllVehicles(round(sum(max(r) for r in d) * SCALE * 2) + 1)
    p = pywrapcp.DefaultRoutingSearchParameters()
    p.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PARALLEL_CHEAPEST_INSERTION
    p.local_search_metaheuristic = routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    p.time_limit.FromMilliseconds(int(time_limit_s * 1000))
    sol = rm.SolveWithParameters(p)
    if sol is None:
        return {"vehicles": None, "distance": None, "objective": None}
    used, total, span = 0, 0.0, 0.0
    for k in range(V):
        idx, path = rm.Start(k), []
        while not rm.IsEnd(idx):
            path.append(nodes[mgr.IndexToNode(idx)])
            idx = sol.Value(rm.NextVar(idx))
        path.append(nodes[mgr.IndexToNode(idx)])
        if len(path) > 2:
            used += 1
            total += sum(d[a][b] for a, b in zip(path, path[1:]))
            span += (sol.Value(td.CumulVar(rm.End(k))) - sol.Value(td.CumulVar(rm.Start(k)))) / SCALE
    return {"vehicles": used, "distance": total, "objective": span if block.objective == "time" else total}
