"""Exact lower bound on PyVRP's own integer cost for tiny routing instances (a few stops), by enumeration.

Every route of every vehicle type over every subset of stops is tried in every order (feasible
when its load fits and the earliest-start simulation meets every window and the shift), then
subsets are combined over the fleet by a dynamic programme over subsets. The result is the
optimum of PyVRP's model for every objective: for time, each order and choice of windows takes
its least duration (departing as late as the windows and the shift allow). The search may stop
once its best cost reaches it: no more search can improve PyVRP's answer.
"""

from __future__ import annotations

import itertools
import math

from pyvrp import ProblemData

MAX_STOPS = 6  # sum over subsets of k! orders: 1,957 routes per vehicle type at 6 stops
MAX_TYPES = 8
MAX_WORK = 200_000  # routes times window choices tried, summed over vehicle types


def _visits(data: ProblemData, owner: list[int]) -> list[list[tuple[int, int, int, int, int]]]:
    """For each stop, its alternative visits: (location, demand, service, window start, window end)."""
    stops: list[list[tuple[int, int, int, int, int]]] = [[] for _ in range(max(owner) + 1)]
    for k, c in enumerate(data.clients()):
        stops[owner[k]].append((c.location, c.delivery[0], c.service_duration, c.tw_early, c.tw_late))
    return stops


def _route_cost(mats, vt, ends, stops, order, timed: bool) -> int | None:
    """The cost of one route visiting `order` (stop indices) with vehicle type vt, None when infeasible."""
    dist, dur = mats
    if sum(stops[i][0][1] for i in order) > vt.capacity[0]:
        return None
    path = [ends[0]] + [stops[i][0][0] for i in order] + [ends[1]]
    if not timed:  # distance: feasible when the earliest schedule (earliest window) meets every window
        clock = vt.tw_early
        for k, i in enumerate(order):
            arrive = clock + dur[path[k]][path[k + 1]]
            begins = [max(arrive, e) for (_, _, _, e, late) in stops[i] if arrive <= late]
            if not begins:
                return None
            clock = min(begins) + stops[i][0][2]
        if clock + dur[path[-2]][path[-1]] > vt.tw_late:
            return None
        return vt.fixed_cost + sum(dist[a][b] for a, b in zip(path, path[1:]))
    costs = [_duration(dur, vt, path, [stops[i][0][2] for i in order], w) for w in _choices(stops, order)]
    costs = [c for c in costs if c is not None]
    return vt.fixed_cost + min(costs) if costs else None


def _choices(stops, order):
    """Every choice of one window per visited stop: [(start, end), ...] per choice."""
    return itertools.product(*[[(e, late) for (_, _, _, e, late) in stops[i]] for i in order])


def _duration(dur, vt, path, service, windows) -> int | None:
    """The least duration (return minus departure) of a route with fixed windows, None when
    infeasible: the end time is max(departure + P, A0) with P the travel and service and A0 the
    end forced by the windows, so the latest departure that keeps every window and the shift
    gives the least duration."""
    clock, low, latest, elapsed = vt.tw_early, None, None, 0
    for k, (e, late) in enumerate(windows):
        leg = dur[path[k]][path[k + 1]]
        clock = max(e, clock + leg)  # earliest schedule: departing at the shift start
        low = e if low is None else max(e, low + leg)  # the schedule forced by windows alone
        if clock > late:
            return None
        elapsed += leg
        latest = late - elapsed if latest is None else min(latest, late - elapsed)
        clock += service[k]
        low += service[k]
        elapsed += service[k]
    leg = dur[path[-2]][path[-1]]
    elapsed += leg
    if clock + leg > vt.tw_late:
        return None
    latest = vt.tw_late - elapsed if latest is None else min(latest, vt.tw_late - elapsed)
    return max(elapsed, low + leg - latest)


def bound(data: ProblemData, owner: list[int], timed: bool) -> int | None:
    """The least cost any complete PyVRP solution can have, or None (too large to enumerate, or no
    complete solution exists)."""
    if not owner or max(owner) + 1 > MAX_STOPS or data.num_vehicle_types > MAX_TYPES:
        return None
    stops = _visits(data, owner)
    S = len(stops)
    orders = sum(math.perm(S, k) for k in range(1, S + 1))
    if timed and orders * math.prod(len(a) for a in stops) * data.num_vehicle_types > MAX_WORK:
        return None
    full = (1 << S) - 1
    INF = None
    best: list[int | None] = [0] + [INF] * full  # cheapest cover of each subset by the types so far
    mats = (data.distance_matrix(0).tolist(), data.duration_matrix(0).tolist())
    depots = [d.location for d in data.depots()]
    for vt in data.vehicle_types():
        ends = (depots[vt.start_depot], depots[vt.end_depot])
        route: list[int | None] = [INF] * (full + 1)
        for mask in range(1, full + 1):
            members = [i for i in range(S) if mask >> i & 1]
            costs = [_route_cost(mats, vt, ends, stops, p, timed) for p in itertools.permutations(members)]
            costs = [c for c in costs if c is not None]
            route[mask] = min(costs) if costs else INF
        for _ in range(min(vt.num_available, S)):  # one more route of this type each round
            nxt = list(best)
            for mask in range(1, full + 1):
                sub = mask
                while sub:
                    rest = best[mask ^ sub]
                    if route[sub] is not None and rest is not None:
                        c = rest + route[sub]
                        if nxt[mask] is None or c < nxt[mask]:
                            nxt[mask] = c
                    sub = (sub - 1) & mask
            best = nxt
    return best[full]
