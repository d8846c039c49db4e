"""Fleet minimisation for vehicles_then_distance: drop the route with fewest stops, reinsert its stops on one vehicle fewer.

Route elimination (as in Nagata & Bräysy, and PyVRP's own minimise_fleet): the best solution
loses its route with fewest stops; PyVRP then searches, from the remaining routes and with only
the vehicles they use, until every stop is served again within capacity and windows (its
penalties on load and lateness rise on their own while infeasible). Each success is kept and
the next route goes; the first failure, the deadline or the load bound ends the phase.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable

from pyvrp import ProblemData, Route, Solution
from pyvrp.stop import FirstFeasible, MaxRuntime, MultipleCriteria

Search = Callable[[ProblemData, object, Solution], Solution]  # (data, stop, initial) -> best


def load_bound(data: ProblemData) -> int:
    """Fewest vehicles the loads alone need: total demand over the largest capacity."""
    demand = sum(c.delivery[0] for c in data.clients() if c.group is None)
    demand += sum(min(data.clients()[k].delivery[0] for k in g.clients) for g in data.groups())
    most = max(vt.capacity[0] for vt in data.vehicle_types())
    return max(1, math.ceil(demand / most)) if most > 0 else 1


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


def fewer_vehicles(
    data: ProblemData, best: Solution, deadline: float, search: Search
) -> tuple[ProblemData, Solution, list[int]]:
    """The smallest fleet found before the deadline: (an instance with just its vehicles, its best
    solution, for each of its vehicle types the index of the type in `data`)."""
    data, best, kinds = _only(data, best.routes())
    floor = load_bound(data)
    while best.num_routes() > floor and time.monotonic() < deadline:
        routes = best.routes()
        drop = min(range(len(routes)), key=lambda k: (routes[k].num_clients(), routes[k].distance()))
        trial, init, used = _only(data, [r for k, r in enumerate(routes) if k != drop])
        stop = MultipleCriteria([FirstFeasible(), MaxRuntime(max(0.0, deadline - time.monotonic()))])
        found = search(trial, stop, init)
        if not (found.is_feasible() and found.is_complete()):
            break
        # the search may have emptied more routes: keep only the vehicles it uses
        data, best, more = _only(trial, found.routes())
        kinds = [kinds[used[j]] for j in more]
    return data, best, kinds
