"""Fleet minimisation for vehicles_then_distance: drop a route, squeeze its stops into one vehicle fewer, restarting from the closest miss.

Route elimination (as in Nagata & Bräysy, and PyVRP's own minimise_fleet): the best solution
loses its route with fewest stops; PyVRP then searches, from the remaining routes and with only
the vehicles they use, until every stop is served again within capacity and windows (every stop
stays in a route; its penalties on load and lateness rise on their own while infeasible). The
search goes in slices: each slice remembers the complete candidate with least violation (time
warp plus excess load, in PyVRP's integer units) and, when it ends without a feasible answer,
the next slice starts from that candidate with another seed. A level is given up when a slice
lowers the least violation by less than a tenth. Each success is kept and the next route goes;
giving up, the deadline or the load bound ends the phase.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable

from pyvrp import ProblemData, Route, Solution
from pyvrp.IteratedLocalSearch import IteratedLocalSearchCallbacks
from pyvrp.stop import FirstFeasible, MaxRuntime, MultipleCriteria

# (data, stop, initial, seed, watch) -> best
Search = Callable[[ProblemData, object, Solution, int, IteratedLocalSearchCallbacks | None], Solution]
PROGRESS = 0.9  # a slice must bring the least violation below this share of the previous least


def load_bound(data: ProblemData) -> int:
    """Fewest vehicles the loads alone need: total demand over the largest capacity."""
    demand = sum(c.delivery[0] for c in data.clients() if c.group is None)
    demand += sum(min(data.clients()[k].delivery[0] for k in g.clients) for g in data.groups())
    most = max(vt.capacity[0] for vt in data.vehicle_types())
    return max(1, math.ceil(demand / most)) if most > 0 else 1


class Closest(IteratedLocalSearchCallbacks):
    """Watches a search: the complete candidate with least violation (time warp plus excess load)."""

    def __init__(self) -> None:
        self.violation: int | None = None
        self.solution: Solution | None = None

    def on_iteration(self, current, candidate, best, cost_evaluator) -> None:
        if not candidate.is_complete():
            return
        v = candidate.time_warp() + sum(candidate.excess_load())
        if self.violation is None or v < self.violation:
            self.violation, self.solution = v, candidate


def _only(data: ProblemData, routes: list[Route]) -> tuple[ProblemData, Solution, list[int]]:
    """The instance with just the vehicles these routes use, the routes as its solution, and for
    each of its vehicle types the index of the type in `data`."""
    counts = Counter(r.vehicle_type() for r in routes)
    used = sorted(counts)
    fewer = data.replace(vehicle_types=[data.vehicle_type(j).replace(num_available=counts[j]) for j in used])
    renum = {j: n for n, j in enumerate(used)}
    solution = Solution(
        fewer, [Route(fewer, [a.idx for a in r if a.is_client()], renum[r.vehicle_type()]) for r in routes]
    )
    return fewer, solution, used


def _squeeze(trial: ProblemData, start: Solution, deadline: float, slice_s: float, search: Search) -> Solution | None:
    """A feasible solution serving every stop on the vehicles of `trial`, searched from `start`
    (which misses the dropped route's stops) in slices; None when given up or out of time."""
    least = None
    seed = 0
    while time.monotonic() < deadline:
        watch = Closest()
        stop = MultipleCriteria([FirstFeasible(), MaxRuntime(max(0.0, min(slice_s, deadline - time.monotonic())))])
        found = search(trial, stop, start, seed, watch)
        if found.is_feasible() and found.is_complete():
            return found
        if watch.violation is None or (least is not None and watch.violation > PROGRESS * least):
            return None  # no headway: this fleet is out of reach in the time there is
        least, start, seed = watch.violation, watch.solution, seed + 1
    return None


def fewer_vehicles(
    data: ProblemData, best: Solution, deadline: float, slice_s: float, search: Search
) -> tuple[ProblemData, Solution, list[int]]:
    """The smallest fleet found before the deadline: (an instance with just its vehicles, its best
    solution, for each of its vehicle types the index of the type in `data`)."""
    data, best, kinds = _only(data, best.routes())
    floor = load_bound(data)
    while best.num_routes() > floor and time.monotonic() < deadline:
        routes = best.routes()
        drop = min(range(len(routes)), key=lambda k: (routes[k].num_clients(), routes[k].distance()))
        trial, init, used = _only(data, [r for k, r in enumerate(routes) if k != drop])
        found = _squeeze(trial, init, deadline, slice_s, search)
        if found is None:
            break
        # the search may have emptied more routes: keep only the vehicles it uses
        data, best, more = _only(trial, found.routes())
        kinds = [kinds[used[j]] for j in more]
    return data, best, kinds
