"""Independent checker for routing solutions: recomputes every check from the block and the
returned solution alone (distances and times from the input's matrix or coordinates)."""

from __future__ import annotations

import math
from typing import Any

from .family import Check


def _tol(x: float) -> float:
    return 1e-6 * max(1.0, abs(x))


def _mats(block: Any):
    ids = list(block.matrix.ids) if block.matrix is not None else [c.id for c in block.coordinates]
    pos = {x: i for i, x in enumerate(ids)}
    if block.matrix is not None:
        d = block.matrix.distance
        t = block.matrix.time
    else:
        cs = block.coordinates
        d = [[math.hypot(a.x - b.x, a.y - b.y) for b in cs] for a in cs]
        t = None
    if t is None:
        t = [[x * 60.0 / block.speed for x in row] for row in d]
    return pos, d, t


def recompute_routes(block: Any, solution: dict[str, Any]) -> list[dict[str, float]]:
    """Distance and time of every route, from the input alone."""
    pos, d, _ = _mats(block)
    veh = {v.id: v for v in block.vehicles}
    stops = {s.id: s for s in block.stops}
    out = []
    for r in solution.get("routes", []):
        v = veh[r["vehicle"]]
        path = [pos[v.start.id]] + [pos[stops[x["id"]].location.id] for x in r["stops"]] + [pos[(v.end or v.start).id]]
        out.append({"distance": sum(d[a][b] for a, b in zip(path, path[1:])), "time": r["end_time"] - r["start_time"]})
    return out


def objective(block: Any, solution: dict[str, Any]) -> float:
    """The objective value of `solution`: total route time or total distance."""
    totals = recompute_routes(block, solution)
    if block.objective == "time":
        return float(sum(r["time"] for r in totals))
    return float(sum(r["distance"] for r in totals))


def check(block: Any, solution: dict[str, Any]) -> list[Check]:
    pos, d, t = _mats(block)
    veh = {v.id: v for v in block.vehicles}
    stops = {s.id: s for s in block.stops}
    routes = solution.get("routes") or []
    checks: list[Check] = []

    def add(name: str, worst: float, ok: str, bad: str) -> None:
        good = worst <= 0
        checks.append(Check(name, good, 0.0 if good else float(worst), ok if good else bad))

    # structure must be sound before anything else can be recomputed
    problems = []
    vseen = set()
    for r in routes:
        if r.get("vehicle") not in veh or r["vehicle"] in vseen:
            problems.append(f"vehicle {r.get('vehicle')!r} unknown or used twice")
        vseen.add(r.get("vehicle"))
        for x in r.get("stops", []):
            if x.get("id") not in stops:
                problems.append(f"unknown stop {x.get('id')!r}")
    if problems:
        for name in (
            "every_stop_once",
            "vehicle_capacity",
            "stop_windows",
            "shift_windows",
            "route_continuity",
            "objective",
        ):
            checks.append(Check(name, False, 1.0, "; ".join(problems[:5])))
        return checks

    # every_stop_once: each stop on exactly one route or listed unserved, never both
    count = {s: 0 for s in stops}
    for r in routes:
        for x in r["stops"]:
            count[x["id"]] += 1
    for s in solution.get("unserved", []):
        if s in count:
            count[s] += 1
    bad = {s: c for s, c in count.items() if c != 1}
    add(
        "every_stop_once",
        float(max([abs(c - 1) for c in bad.values()] + [0])),
        f"{len(stops)} stops each served once ({len(solution.get('unserved', []))} unserved)",
        "stops not served exactly once: " + ", ".join(list(bad)[:5]),
    )

    # vehicle_capacity and load_after
    worst, where = 0.0, ""
    for r in routes:
        v = veh[r["vehicle"]]
        load = 0.0
        for x in r["stops"]:
            load += stops[x["id"]].demand
            if abs(x.get("load_after", math.nan) - load) > _tol(load) or not math.isfinite(
                x.get("load_after", math.nan)
            ):
                worst = max(worst, abs(x.get("load_after", 0) - load) or 1.0)
                where = f"vehicle {v.id}: load_after at {x['id']} should be {load}"
        if load - v.capacity > _tol(v.capacity) and load - v.capacity > worst:
            worst, where = load - v.capacity, f"vehicle {v.id} carries {load} > capacity {v.capacity}"
    add("vehicle_capacity", worst, "no vehicle over capacity; loads recomputed", where)

    # stop_windows: service begins (departure - service) at/after arrival and inside a window
    worst, where = 0.0, ""
    for r in routes:
        for x in r["stops"]:
            s = stops[x["id"]]
            begin = x["departure"] - s.service
            v = max(0.0, x["arrival"] - begin - _tol(begin))
            if s.windows:
                v = max(
                    v,
                    min(
                        max(0.0, w.start - begin - _tol(begin)) + max(0.0, begin - w.end - _tol(begin))
                        for w in s.windows
                    ),
                )
            if v > worst:
                worst, where = v, f"stop {s.id}: service begins at {begin}, outside its windows or before arrival"
    add("stop_windows", worst, "every service begins inside one of its stop's windows", where)

    # shift_windows
    worst, where = 0.0, ""
    for r in routes:
        v = veh[r["vehicle"]]
        if v.shift:
            e = max(
                0.0,
                v.shift.start - r["start_time"] - _tol(v.shift.start),
                r["end_time"] - v.shift.end - _tol(v.shift.end),
            )
            if e > worst:
                worst, where = e, f"vehicle {v.id} works {r['start_time']}..{r['end_time']} outside its shift"
    add("shift_windows", worst, "every route inside its vehicle's shift", where)

    # route_continuity: start -> stops -> end with travel times respected
    worst, where = 0.0, ""
    for r in routes:
        v = veh[r["vehicle"]]
        here = pos[v.start.id]
        clock = r["start_time"]
        for x in r["stops"]:
            nxt = pos[stops[x["id"]].location.id]
            e = clock + t[here][nxt] - x["arrival"]
            if e > _tol(x["arrival"]) and e > worst:
                worst, where = e, f"vehicle {v.id} reaches {x['id']} before it could travel there"
            here, clock = nxt, x["departure"]
        e = clock + t[here][pos[(v.end or v.start).id]] - r["end_time"]
        if e > _tol(r["end_time"]) and e > worst:
            worst, where = e, f"vehicle {v.id} returns before it could travel back"
    add("route_continuity", worst, "every route leaves its start, visits its stops in order and ends at its end", where)

    # objective: reported route distance and time recomputed
    worst, where = 0.0, ""
    for r, rc in zip(routes, recompute_routes(block, solution)):
        for k in ("distance", "time"):
            e = abs(r[k] - rc[k])
            if e > _tol(rc[k]) and e > worst:
                worst, where = e, f"vehicle {r['vehicle']}: reported {k} {r[k]} != {rc[k]}"
    # the solution's totals, when it reports them
    rcs = recompute_routes(block, solution)
    for k, real in (("vehicles_used", float(len(routes))), ("total_distance", float(sum(r["distance"] for r in rcs)))):
        if k in solution:
            e = abs(float(solution[k]) - real)
            if e > _tol(real) and e > worst:
                worst, where = e, f"reported {k} {solution[k]} != {real}"
    add("objective", worst, "route distances and times (and the totals) recomputed from the input", where)
    return checks
