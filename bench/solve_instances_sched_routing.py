"""Loaders turning bench instance files (bench/instances/) into schedule and routing blocks,
and a runner that solves each with its family and prints one JSON line per instance:
instance, problem, status, objective, published, gap_pct, seconds.

    .venv/bin/python bench/solve_instances_sched_routing.py [--time-limit 30] [names...]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import msgspec

from tollway_solve.routing import RoutingBlock
from tollway_solve.routing import family as routing_family
from tollway_solve.schedule import ScheduleBlock
from tollway_solve.schedule import family as schedule_family

BENCH = Path(__file__).resolve().parent / "instances"  # see instances/README.md


def load_jobshop(path: Path) -> ScheduleBlock:
    """Job shop (JSPLIB layout) -> schedule block: one job per operation, machines as
    capacity-1 resources, a chain of precedences per job; objective makespan."""
    rows = [ln.split() for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    n, m = int(rows[0][0]), int(rows[0][1])
    jobs, prec = [], []
    for j in range(n):
        vals = list(map(int, rows[1 + j]))
        prev = None
        for k in range(m):
            mach, dur = vals[2 * k], vals[2 * k + 1]
            oid = f"j{j}_o{k}"
            jobs.append({"id": oid, "duration": dur, "needs": {f"m{mach}": 1}})
            if prev:
                prec.append({"before": prev, "after": oid})
            prev = oid
    resources = [{"id": f"m{i}", "capacity": 1} for i in range(m)]
    return msgspec.convert(
        {"objective": "makespan", "resources": resources, "jobs": jobs, "precedence": prec}, ScheduleBlock
    )


def load_psplib_sm(path: Path) -> ScheduleBlock:
    """PSPLIB single-mode RCPSP (.sm) -> schedule block (makespan)."""
    lines = path.read_text().splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("PRECEDENCE RELATIONS"))
    succ: dict[int, list[int]] = {}
    k = i + 2
    while not lines[k].startswith("*"):
        v = list(map(int, lines[k].split()))
        succ[v[0]] = v[3 : 3 + v[2]]
        k += 1
    i = next(k for k, ln in enumerate(lines) if ln.startswith("REQUESTS/DURATIONS"))
    k = i + 3
    jobs = []
    nres = 0
    while not lines[k].startswith("*"):
        v = list(map(int, lines[k].split()))
        req = v[3:]
        nres = len(req)
        jobs.append({"id": str(v[0]), "duration": v[2], "needs": {f"R{r + 1}": q for r, q in enumerate(req) if q > 0}})
        k += 1
    i = next(k for k, ln in enumerate(lines) if ln.startswith("RESOURCEAVAILABILITIES"))
    caps = list(map(int, lines[i + 2].split()))
    resources = [{"id": f"R{r + 1}", "capacity": caps[r]} for r in range(nres)]
    prec = [{"before": str(a), "after": str(b)} for a, bs in succ.items() for b in bs]
    return msgspec.convert(
        {"objective": "makespan", "resources": resources, "jobs": jobs, "precedence": prec}, ScheduleBlock
    )


def load_solomon(path: Path, objective: str = "vehicles_then_distance") -> RoutingBlock:
    """Solomon VRPTW -> routing block. Coordinates with speed 60 so travel minutes equal
    Euclidean distance (Solomon's convention); depot window = every vehicle's shift."""
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    k = next(i for i, ln in enumerate(lines) if ln.startswith("NUMBER"))
    nveh, cap = map(int, lines[k + 1].split())
    rows = [list(map(float, ln.split())) for ln in lines[k + 2 :] if ln and ln[0].isdigit()]
    depot = rows[0]
    coords = [{"id": f"n{int(r[0])}", "x": r[1], "y": r[2]} for r in rows]
    stops = [
        {
            "id": str(int(r[0])),
            "demand": r[3],
            "location": {"id": f"n{int(r[0])}"},
            "windows": [{"start": r[4], "end": r[5]}],
            "service": r[6],
        }
        for r in rows[1:]
    ]
    vehicles = [
        {
            "id": f"v{i + 1}",
            "capacity": cap,
            "start": {"id": "n0"},
            "end": {"id": "n0"},
            "shift": {"start": depot[4], "end": depot[5]},
        }
        for i in range(nveh)
    ]
    return msgspec.convert(
        {"objective": objective, "vehicles": vehicles, "stops": stops, "coordinates": coords, "speed": 60}, RoutingBlock
    )


def load_cvrp(path: Path, vehicles: int | None = None) -> RoutingBlock:
    """TSPLIB CVRP (EUC_2D) -> routing block with a matrix of rounded Euclidean distances
    (the TSPLIB convention behind the published values); objective distance."""
    text = path.read_text().splitlines()
    cap = None
    coords: dict[int, tuple[float, float]] = {}
    demand: dict[int, float] = {}
    depot = 1
    sec = None
    for ln in text:
        s = ln.strip()
        if not s:
            continue
        if s.startswith("CAPACITY"):
            cap = float(s.split(":")[1])
        elif s.startswith("NODE_COORD_SECTION"):
            sec = "c"
        elif s.startswith("DEMAND_SECTION"):
            sec = "d"
        elif s.startswith("DEPOT_SECTION"):
            sec = "p"
        elif s.startswith("EOF"):
            break
        elif sec == "c":
            a = s.split()
            coords[int(a[0])] = (float(a[1]), float(a[2]))
        elif sec == "d":
            a = s.split()
            demand[int(a[0])] = float(a[1])
        elif sec == "p":
            v = int(s.split()[0])
            if v > 0:
                depot = v
                sec = None
    name = path.stem
    if vehicles is None:
        vehicles = int(name.split("-k")[-1]) if "-k" in name else len(coords)
    ids = sorted(coords)
    dist = [[float(round(math.dist(coords[a], coords[b]))) for b in ids] for a in ids]
    stops = [{"id": str(i), "demand": demand.get(i, 0), "location": {"id": str(i)}} for i in ids if i != depot]
    veh = [
        {"id": f"v{k + 1}", "capacity": cap, "start": {"id": str(depot)}, "end": {"id": str(depot)}}
        for k in range(vehicles)
    ]
    return msgspec.convert(
        {
            "objective": "distance",
            "vehicles": veh,
            "stops": stops,
            "matrix": {"ids": [str(i) for i in ids], "distance": dist, "time": dist},
        },
        RoutingBlock,
    )


INSTANCES = {
    # name: (problem, loader, published, what the objective compares)
    "ft06": ("schedule", lambda: load_jobshop(BENCH / "jobshop" / "ft06"), 55.0),
    "ft10": ("schedule", lambda: load_jobshop(BENCH / "jobshop" / "ft10"), 930.0),
    "j301_1": ("schedule", lambda: load_psplib_sm(BENCH / "rcpsp" / "j301_1.sm"), 43.0),
    "C101": ("routing", lambda: load_solomon(BENCH / "vrptw" / "C101.txt"), 828.94),
    "R101": ("routing", lambda: load_solomon(BENCH / "vrptw" / "R101.txt"), 1650.80),
    "A-n32-k5": ("routing", lambda: load_cvrp(BENCH / "cvrp" / "A-n32-k5.vrp"), 784.0),
}
PUBLISHED_VEHICLES = {"C101": 10, "R101": 19, "A-n32-k5": 5}


def run(name: str, time_limit_s: float) -> dict:
    problem, loader, published = INSTANCES[name]
    block = loader()
    fam = schedule_family if problem == "schedule" else routing_family
    fam.validate(block)
    t0 = time.monotonic()
    out = fam.solve(block, time_limit_s)
    secs = time.monotonic() - t0
    obj = None
    row = {"instance": name, "problem": problem, "status": out.status}
    if out.solution is not None:
        checks = fam.check(block, out.solution)
        failed = [c.name for c in checks if not c.satisfied]
        if failed:
            row["status"] = "internal_error"
            row["failed_checks"] = failed
        obj = fam.objective(block, out.solution)
        if problem == "routing":
            # report distance (published values are distances; vehicles reported alongside)
            obj = round(sum(r["distance"] for r in out.solution["routes"]), 2)
            row["vehicles"] = sum(1 for r in out.solution["routes"] if r["stops"])
            row["published_vehicles"] = PUBLISHED_VEHICLES.get(name)
    row.update(
        {
            "objective": obj,
            "published": published,
            "gap_pct": None if obj is None else round(100.0 * (obj - published) / published, 3),
            "seconds": round(secs, 2),
        }
    )
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args(argv)
    for name in a.names or list(INSTANCES):
        print(json.dumps(run(name, a.time_limit)), flush=True)


if __name__ == "__main__":
    main()
