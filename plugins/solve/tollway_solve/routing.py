"""Routing family: capacitated vehicle routing with time windows and shifts (PyVRP, else OR-Tools routing).

Block (`routing`)::

    objective     "distance" | "time" | "vehicles_then_distance"      (default "distance")
    vehicles      [{id, capacity, start {id}, end {id} (default = start),
                    shift {start, end} (optional: leave start at/after shift.start, back by shift.end),
                    count (default 1: identical vehicles this entry stands for, 1 to 1000)}]
    stops         [{id, demand (default 0), location {id}, service (default 0),
                    windows [{start, end}] (optional: service begins inside one window)}]
    matrix        {ids, distance [[...]], time [[...]] (optional)}    square, ordered by ids
      or
    coordinates   [{id, x, y}]                      Euclidean distance between (x, y)
    speed         distance units per hour used when no time matrix is given (default 40)
    distance_unit label, default "km";  time_unit label, default "minutes"

Travel time: the time matrix when given; otherwise travel minutes = distance / speed * 60, with
speed 40 distance units per hour unless given (coordinates or a matrix without times at the
default speed add a warning to `meta.warnings`). Every stop must be served.

Fleet: a vehicle entry with `count` n > 1 stands for n identical vehicles named `<id>#1` ..
`<id>#n` in the routes (an entry with count 1 keeps its id); a copy's name must not clash with
another vehicle's id (duplicate_id), and all copies together are at most 12,500 vehicles.

Objectives
* `distance`: total distance of all routes.
* `time`: total route duration (return time minus departure time, waiting and service included).
* `vehicles_then_distance` ("vehicles, then distance"): fewest vehicles
  first, then total distance. `objective_value` is the total distance; the vehicle count is the
  solution's `vehicles_used` (the number of routes).

Solution::

    {routes: [{vehicle, start_time, end_time,
               stops: [{id, arrival, departure, load_after}], distance, time}],
     unserved: [stop ids], vehicles_used, total_distance}

Only vehicles that leave are listed. `arrival` is when the vehicle reaches the stop; service
begins at max(arrival, the window's start) and `departure` = service begin + service time.
`load_after` is the demand carried on the route after the stop (cumulative demand served).
`start_time`/`end_time` are the departure from the start and the arrival at the end location
(additive fields, used by the shift_windows check); `time` = end_time - start_time.
`vehicles_used` and `total_distance` (every objective) are the number of routes and the sum of
their distances; the `objective` check recomputes both.

Engines: PyVRP (routing_pyvrp.py) solves every request (a stop with several windows is a group
of alternative visits, one per window, exactly one made). OR-Tools routing (routing_model.py)
takes over when PyVRP has not served every stop by three quarters of the time limit, when the
integer time grid (a thousandth of a time unit unless values are huge) would leave a stop no
window or a vehicle no shift (OR-Tools then leaves such a stop unserved), and when loads
exceed 64-bit integers once scaled. PyVRP's search runs to the time limit unless a tiny
instance (up to six stops) is solved: its enumerated optimum (routing_exact) is reached.

Statuses: never `optimal` (bound and gap are null: PyVRP's optimum is on its rounded integer
grid, not proven in input units). `feasible` when every stop is served and the search ended
before the time limit (a tiny instance whose enumerated optimum was reached); `timeout` with
every stop served when the search used the whole time limit;
`infeasible` only for contradictions proven before search (a stop's demand above every
vehicle's capacity; a stop no vehicle can reach within its windows and shift, using shortest
travel times); `timeout` with stops in `unserved` when the time ran out before every stop could
be served.

Validation codes: empty_id, duplicate_id, unknown_id, no_vehicles, no_stops, too_many_stops,
too_many_vehicles, missing_locations, ambiguous_locations, bad_matrix, reversed_window,
overlapping_windows, bad_magnitude, unsupported_precision (a `count` that is not a whole number
from 1 to 1000 is refused by the decoding: bad_value, naming every such field).
"""

from __future__ import annotations

import math
from typing import Any

from .family import ENGINE, Check, InputProblem, Outcome
from .routing_block import (  # noqa: F401  (the block types stay importable from here)
    DEFAULT_SPEED,
    MAX_LOCATIONS,
    MAX_MAGNITUDE,
    MAX_STOPS,
    MAX_VEHICLES,
    MAX_WINDOWS,
    Coordinate,
    LocationRef,
    Matrix,
    RoutingBlock,
    Stop,
    Vehicle,
    Window,
    _num,
    _windows,
    amount_scale,
    copy_id,
    expand,
    fleet_size,
    location_ids,
    matrices,
)
from .routing_pyvrp import PYVRP


class RoutingFamily:
    name = "routing"
    block_type = RoutingBlock
    VERSION = f"routing-5/{PYVRP}+{ENGINE}"  # bump the revision when a change can alter answers

    def validate(self, block: RoutingBlock) -> None:
        if not block.vehicles:
            raise InputProblem("no_vehicles", "at least one vehicle is required", "routing.vehicles")
        if not block.stops:
            raise InputProblem("no_stops", "at least one stop is required", "routing.stops")
        if len(block.stops) > MAX_STOPS:
            raise InputProblem("too_many_stops", f"at most {MAX_STOPS} stops", "routing.stops")
        if block.matrix is None and block.coordinates is None:
            raise InputProblem("missing_locations", "give a matrix or coordinates", "routing")
        if block.matrix is not None and block.coordinates is not None:
            raise InputProblem("ambiguous_locations", "give a matrix or coordinates, not both", "routing")
        if not (
            isinstance(block.speed, (int, float)) and math.isfinite(block.speed) and 0 < block.speed <= MAX_MAGNITUDE
        ):
            raise InputProblem("bad_magnitude", "speed must be positive and finite", "routing.speed")
        ids = location_ids(block)
        seen: set[str] = set()
        for i, x in enumerate(ids):
            f = f"routing.matrix.ids[{i}]" if block.matrix is not None else f"routing.coordinates[{i}].id"
            if not x:
                raise InputProblem("empty_id", "location id is empty", f)
            if x in seen:
                raise InputProblem("duplicate_id", f"location id {x!r} appears twice", f)
            seen.add(x)
        if block.matrix is not None:
            n = len(ids)
            for name in ("distance", "time"):
                mat = getattr(block.matrix, name)
                if mat is None:
                    continue
                if len(mat) != n or any(len(r) != n for r in mat):
                    raise InputProblem(
                        "bad_matrix", f"matrix.{name} must be {n} x {n} (ordered by ids)", f"routing.matrix.{name}"
                    )
                for a, row in enumerate(mat):
                    for b, v in enumerate(row):
                        if not math.isfinite(v) or v < 0 or v > MAX_MAGNITUDE:
                            raise InputProblem(
                                "bad_matrix",
                                f"matrix.{name}[{a}][{b}] must be finite, nonnegative, at most 1e12",
                                f"routing.matrix.{name}[{a}][{b}]",
                            )
        else:
            for i, c in enumerate(block.coordinates or []):
                for k in ("x", "y"):
                    v = getattr(c, k)
                    if not math.isfinite(v) or abs(v) > MAX_MAGNITUDE:
                        raise InputProblem(
                            "bad_magnitude", "coordinates must be finite, at most 1e12", f"routing.coordinates[{i}].{k}"
                        )
        if fleet_size(block) > MAX_VEHICLES:
            raise InputProblem(
                "too_many_vehicles", f"at most {MAX_VEHICLES} vehicles counting every copy", "routing.vehicles"
            )
        vseen: set[str] = set()
        for i, v in enumerate(block.vehicles):
            f = f"routing.vehicles[{i}]"
            if not v.id:
                raise InputProblem("empty_id", "vehicle id is empty", f + ".id")
            for k in range(v.count):  # a copy's name (`van#2`) must not clash with another vehicle's
                name = copy_id(v, k)
                if name in vseen:
                    raise InputProblem("duplicate_id", f"vehicle id {name!r} appears twice", f + ".id")
                vseen.add(name)
            _num(v.capacity, f + ".capacity")
            for side in ("start", "end"):
                ref = getattr(v, side)
                if ref is not None and ref.id not in seen:
                    raise InputProblem(
                        "unknown_id", f"vehicle {v.id!r} {side} location {ref.id!r} is unknown", f"{f}.{side}.id"
                    )
            if v.shift is not None:
                _windows([v.shift], f + ".shift")
        sseen: set[str] = set()
        for i, s in enumerate(block.stops):
            f = f"routing.stops[{i}]"
            if not s.id:
                raise InputProblem("empty_id", "stop id is empty", f + ".id")
            if s.id in sseen:
                raise InputProblem("duplicate_id", f"stop id {s.id!r} appears twice", f + ".id")
            sseen.add(s.id)
            if s.location.id not in seen:
                raise InputProblem(
                    "unknown_id", f"stop {s.id!r} location {s.location.id!r} is unknown", f + ".location.id"
                )
            _num(s.demand, f + ".demand")
            _num(s.service, f + ".service")
            _windows(s.windows, f + ".windows")
        amount_scale(block)

    def estimate_variables(self, block: RoutingBlock) -> int:
        return 4 * (len(block.stops) + 2 * fleet_size(block))

    def size(self, block: RoutingBlock) -> dict[str, int]:
        return {"stops": len(block.stops), "vehicles": fleet_size(block), "locations": len(location_ids(block))}

    def price_units(self, block: RoutingBlock) -> int:
        return self.estimate_variables(block)

    def objective(self, block: RoutingBlock, solution: dict[str, Any]) -> float:
        from .routing_check import objective

        return objective(expand(block), solution)

    def solve(self, block: RoutingBlock, time_limit_s: float) -> Outcome:

        if routing_pyvrp.unsupported(block) is None:
            out = routing_pyvrp.solve(block, time_limit_s)
        else:
            out = routing_model.solve(expand(block, most=len(block.stops)), time_limit_s)
        if out.solution is not None:  # the per-solution figures beside the objective
            routes = out.solution["routes"]
            out.solution["vehicles_used"] = len(routes)
            out.solution["total_distance"] = float(sum(r["distance"] for r in routes))
        return out

    def warnings(self, block: RoutingBlock) -> list[str]:
        """Shown in the result's meta: travel times taken from the default speed."""
        if block.speed == DEFAULT_SPEED and (block.coordinates is not None or block.matrix.time is None):
            return [
                f"travel times assume the default speed of {DEFAULT_SPEED:g} {block.distance_unit} per hour; "
                "give `speed` (or a time matrix) if your vehicles move at another pace"
            ]
        return []

    def check(self, block: RoutingBlock, solution: dict[str, Any]) -> list[Check]:
        from .routing_check import check

        return check(expand(block), solution)


family = RoutingFamily()

# load the model (and OR-Tools) with the family, not on the first solve
from . import routing_check, routing_model, routing_pyvrp  # noqa: E402,F401
