"""PyVRP (iterated local search) model for the routing family: every request whose loads fit 64-bit integers.

PyVRP works on integers: distances are scaled (x1000 unless the totals would get too large) and
rounded to nearest; travel and service times are scaled and rounded up and windows and shifts
inward, so the exact replay of its routes in input units never breaks a window or a shift. A stop
with several windows is a group of optional visits, one per window, exactly one of which is
made. Each vehicle entry is one PyVRP vehicle type (`num_available` = its count).
vehicles_then_distance puts a fixed cost above any total distance on every vehicle used, runs
route elimination (routing_fleet), then polishes distance on the smallest fleet (on long routes
after a fresh search on that fleet: _afresh); time weighs route durations only.
The search runs to the time limit (PyVRP's iterated local search restarts from its best
solution on its own when stuck), unless a tiny instance's enumerated bound (routing_exact) shows
that nothing cheaper exists in PyVRP's model. When it has
no solution serving every stop by HANDOVER of the time, OR-Tools routing (routing_model), which
may leave stops unserved, gets the rest of the time; it also solves a request whose stop has
every window narrower than the integer grid.
"""

from __future__ import annotations

import math
import time
import warnings
from importlib.metadata import version
from types import SimpleNamespace

import numpy as np
from pyvrp import (
    Client,
    ClientGroup,
    Depot,
    IteratedLocalSearchParams,
    Location,
    ProblemData,
    Solution,
    SolveParams,
    VehicleType,
)
from pyvrp import solve as pyvrp_solve
from pyvrp.exceptions import PenaltyBoundWarning

from .family import Outcome, status_of
from .routing_block import RoutingBlock, amount_scale, copy_id, expand, location_ids, matrices
from .routing_check import objective

PYVRP = f"pyvrp-{version('pyvrp')}"
HANDOVER = 0.75  # share of the time after which an incomplete search hands over to OR-Tools
FLEET_FROM = 0.1  # vehicles_then_distance: share of the time after which a feasible first search ends
FLEET_UNTIL = 0.85  # ... and by which route elimination (routing_fleet) hands over to distance
FLEET_SLICE = 0.13  # share of the time in one slice of route elimination's search (routing_fleet)
LONG_ROUTES = 20  # stops per route from which the distance phase also searches afresh (see solve)
LONG_HISTORY = 1000  # ... with this late-acceptance history (PyVRP's default is 300)
INT_SAFE = 2**62  # loads and costs stay below this on PyVRP's 64-bit integers


def unsupported(block: RoutingBlock) -> str | None:
    """Why PyVRP cannot take this request (None when it can)."""
    amt = amount_scale(block)
    if (
        sum(s.demand for s in block.stops) * amt >= INT_SAFE
        or max(v.capacity for v in block.vehicles) * amt >= INT_SAFE
    ):
        return "loads beyond 64-bit integers once scaled"
    return None


def _scale(maxval: float, count: int, cap: int = 1000) -> int:
    s = cap
    while s > 1 and maxval * s * max(1, count) > 1e12:
        s //= 10
    return s


def _up(x: float, s: int) -> int:
    return math.ceil(x * s - 1e-9)


def _down(x: float, s: int) -> int:
    return math.floor(x * s + 1e-9)


class _Stop:
    """PyVRP stopping criterion: the deadline, an incomplete search at the handover, a cost that
    reaches the enumerated bound of a tiny instance (routing_exact), or a complete solution once
    `enough` has passed (the first search before fleet minimisation): nothing else ends the
    search early, so an unproven search uses the whole time limit."""

    def __init__(self, deadline: float, handover: float, bound: int | None, enough: float | None = None) -> None:
        self.deadline, self.handover, self.bound, self.enough = deadline, handover, bound, enough
        self.out_of_time = False  # the deadline, not the bound, ended the search

    def __call__(self, cost: int) -> bool:
        now = time.monotonic()
        if now >= self.deadline:
            self.out_of_time = True
            return True
        if cost >= INT_SAFE:  # PyVRP reports no feasible solution yet with its largest cost
            return now >= self.handover
        return (self.bound is not None and cost <= self.bound) or (self.enough is not None and now >= self.enough)


def _data(block: RoutingBlock, d: np.ndarray, t: np.ndarray, SD: int, ST: int) -> tuple[ProblemData, list[int]] | None:
    """PyVRP's instance and the stop of each of its clients, or None when rounding to the
    integer grid empties every window of a stop, or a shift."""
    ids = location_ids(block)
    pos = {x: i for i, x in enumerate(ids)}
    xy = {c.id: (c.x, c.y) for c in block.coordinates or []}
    locations = [Location(*xy.get(x, (0.0, 0.0))) for x in ids]
    ends = sorted({pos[v.start.id] for v in block.vehicles} | {pos[(v.end or v.start).id] for v in block.vehicles})
    depot = {loc: k for k, loc in enumerate(ends)}
    depots = [Depot(location=loc) for loc in ends]
    amt = amount_scale(block)
    clients, groups, owner = [], [], []
    for i, s in enumerate(block.stops):
        grid = [{}]
        if s.windows:
            grid = [{"tw_early": _up(w.start, ST), "tw_late": _down(w.end, ST)} for w in s.windows]
            grid = [tw for tw in grid if tw["tw_early"] <= tw["tw_late"]]
            if not grid:
                return None
        kw = {
            "location": pos[s.location.id],
            "delivery": [round(s.demand * amt)],
            "service_duration": _up(s.service, ST),
            "name": s.id,
        }
        if len(grid) == 1:
            clients.append(Client(**kw, **grid[0]))
            owner.append(i)
            continue
        # several windows: one optional visit per window, exactly one of them made
        first = len(clients)
        for tw in grid:
            clients.append(Client(**kw, **tw, required=False, group=len(groups)))
            owner.append(i)
        groups.append(ClientGroup(list(range(first, len(clients))), required=True))
    lex = block.objective == "vehicles_then_distance"
    # more than any total distance: each route's arcs out of its stops and its start
    fixed = int(d.max(initial=0) * SD) * (2 * len(block.stops) + 1) + 1 if lex else 0
    types = []
    for v in block.vehicles:
        kw = {}
        if v.shift is not None:
            kw = {"tw_early": _up(v.shift.start, ST), "tw_late": _down(v.shift.end, ST)}
            if kw["tw_early"] > kw["tw_late"]:
                return None
        timed = block.objective == "time"
        types.append(
            VehicleType(
                num_available=min(v.count, len(block.stops)),
                capacity=[round(v.capacity * amt)],
                start_depot=depot[pos[v.start.id]],
                end_depot=depot[pos[(v.end or v.start).id]],
                fixed_cost=fixed,
                unit_distance_cost=0 if timed else 1,
                unit_duration_cost=1 if timed else 0,
                name=v.id,
                **kw,
            )
        )
    Di = np.rint(d * SD).astype(np.int64)
    Ti = np.ceil(t * ST - 1e-9).astype(np.int64)
    return ProblemData(locations, clients, depots, types, [Di], [Ti], groups), owner


def _search(
    data: ProblemData, stop, initial: Solution | None, seed: int = 0, watch=None, history: int | None = None
) -> Solution:
    """PyVRP's best solution within `stop`, from `initial` when given (else from PyVRP's own random
    start); `watch` (PyVRP search callbacks) sees every iteration; `history` replaces PyVRP's
    late-acceptance history length."""
    ils = {"callbacks": watch} if watch is not None else {}
    if history is not None:
        ils["history_length"] = history
    params = SolveParams(ils=IteratedLocalSearchParams(**ils))
    with warnings.catch_warnings():  # a hard-to-serve instance is handed over, not printed
        warnings.simplefilter("ignore", PenaltyBoundWarning)
        return pyvrp_solve(
            data, stop=stop, seed=seed, collect_stats=False, display=False, params=params, initial_solution=initial
        ).best


def _afresh(data: ProblemData, squeezed: Solution, t_end: float) -> tuple[Solution, int | None]:
    """Before the distance polish of vehicles_then_distance: on long routes (LONG_ROUTES stops or
    more each, the two-to-four-vehicle Solomon R2 and RC2 kind), route elimination's answer is a
    poor start that the polish seldom leaves, so half the time left goes to a search from PyVRP's
    own start on the same fleet; the polish continues from the better of the two, both with a
    longer late-acceptance history. Returns (the start of the polish, its history length)."""
    if squeezed.num_clients() < LONG_ROUTES * squeezed.num_routes():
        return squeezed, None
    mid = time.monotonic() + 0.5 * max(0.0, t_end - time.monotonic())
    other = _search(data, _Stop(mid, mid, None), None, history=LONG_HISTORY)
    better = (
        other.is_feasible()
        and other.is_complete()
        and (other.num_routes(), other.distance()) < (squeezed.num_routes(), squeezed.distance())
    )
    return (other if better else squeezed), LONG_HISTORY


def solve(block: RoutingBlock, time_limit_s: float) -> Outcome:
    from . import routing_exact, routing_fleet, routing_model

    started = time.monotonic()
    t_end = started + max(0.5, time_limit_s - 0.5)
    ids = location_ids(block)
    pos = {x: i for i, x in enumerate(ids)}
    d_in, t_in = matrices(block)
    d, t = np.array(d_in, dtype=float), np.array(t_in, dtype=float)
    S = len(block.stops)
    stop_locs = [pos[s.location.id] for s in block.stops]
    # the OR-Tools model's proofs of infeasibility, one vehicle per entry (copies are identical)
    shim = SimpleNamespace(
        t=t_in,
        S=S,
        V=len(block.vehicles),
        loc=stop_locs
        + [pos[v.start.id] for v in block.vehicles]
        + [pos[(v.end or v.start).id] for v in block.vehicles],
    )
    pre = routing_model._precheck(block, shim)
    if pre:
        return Outcome("infeasible", None, None, None, None, conflicts=pre, conflicts_complete=True)
    SD = _scale(float(d.max(initial=0)), 2 * S + 1)
    times = [float(t.max(initial=0)) + max(s.service for s in block.stops)]
    times += [w.end for s in block.stops for w in (s.windows or [])] + [v.shift.end for v in block.vehicles if v.shift]
    ST = _scale(max(times), 2 * S + 1)
    built = _data(block, d, t, SD, ST)
    if built is None:
        return routing_model.solve(expand(block, most=S), time_limit_s)
    data, owner = built
    nvars = S + sum(vt.num_available for vt in data.vehicle_types())
    proof = routing_exact.bound(data, owner, timed=block.objective == "time")
    span = t_end - started
    # vehicles first: a first search, route elimination, then the rest of the time on distance
    by_fleet = block.objective == "vehicles_then_distance" and proof is None
    stop = _Stop(t_end, started + HANDOVER * span, proof, started + FLEET_FROM * span if by_fleet else None)
    best = _search(data, stop, None)
    if not best.is_feasible() or not best.is_complete():
        return routing_model.solve(expand(block, most=S), max(1.0, t_end - time.monotonic() + 0.5))
    kinds = list(range(data.num_vehicle_types))
    if by_fleet:
        data, best, kinds = routing_fleet.fewer_vehicles(
            data, best, started + FLEET_UNTIL * span, FLEET_SLICE * span, _search
        )
        best, history = _afresh(data, best, t_end)
        stop = _Stop(t_end, t_end, None)
        best = _search(data, stop, best, history=history)
    fleet = expand(block, most=S)
    first = np.cumsum([0] + [min(v.count, S) for v in block.vehicles])
    used = [0] * len(block.vehicles)
    routes: list[list[int]] = [[] for _ in fleet.vehicles]
    starts = [0] * len(fleet.vehicles)
    for r in best.routes():
        j = kinds[r.vehicle_type()]
        k = int(first[j]) + used[j]
        used[j] += 1
        assert fleet.vehicles[k].id == copy_id(block.vehicles[j], used[j] - 1)
        routes[k] = [owner[a.idx] for a in r if a.is_client()]
        starts[k] = r.start_time()
    m = SimpleNamespace(
        t=t_in,
        d=d_in,
        S=S,
        V=len(fleet.vehicles),
        ST=ST,
        loc=stop_locs
        + [pos[v.start.id] for v in fleet.vehicles]
        + [pos[(v.end or v.start).id] for v in fleet.vehicles],
    )
    solution = routing_model.replay(fleet, m, routes, starts)
    status = status_of(proven=False, found=True, out_of_time=stop.out_of_time)
    return Outcome(status, objective(fleet, solution), None, None, solution, variables_built=nvars)
