"""Solve quality bench: converts the standard instances in bench/instances/ into
`solve` requests, runs them through the tool's own `run` (model, solver and the
independent checks), and prints one JSON line per instance:
{instance, problem, status, objective, published, gap_pct, seconds}; routing rows add the
vehicle count beside the best-known fleet (published_vehicles) and, from the same run, a
plain OR-Tools guided-local-search baseline over the same instance and time limit
(baseline_vehicles, baseline_objective, ratio_to_baseline); packing rows not proven optimal
add the tool's proven lower bound (bound); one-dimensional bin rows add plain first fit
decreasing's bins from the same run (anchor, anchor_objective).

    .venv/bin/python bench/solve.py [--time-limit 30] [name ...]

Instances are a table of loaders (LOADERS): each yields (instance, request,
published value). Routing and schedule instances are added to the same table.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

BENCH = Path(__file__).resolve().parent / "instances"  # see instances/README.md

Case = tuple[str, dict[str, Any], float]  # instance, request (without time_limit_s), published


def _numbers(path: Path) -> list[str]:
    return path.read_text().split()


def binpack_orlib(path: Path) -> Iterator[Case]:
    """OR-Library binpack layout: count; per problem a name, `capacity n best`, then n sizes."""
    tok = _numbers(path)
    count, pos = int(tok[0]), 1
    for _ in range(count):
        name = tok[pos]
        cap, n, best = float(tok[pos + 1]), int(tok[pos + 2]), float(tok[pos + 3])
        sizes = [float(x) for x in tok[pos + 4 : pos + 4 + n]]
        pos += 4 + n
        yield name, _bin_request(cap, sizes), best


def binpack_bpp(path: Path, published: float) -> Iterator[Case]:
    """BPPLIB (Scholl) layout: n, capacity, then n sizes."""
    tok = _numbers(path)
    n, cap = int(tok[0]), float(tok[1])
    yield path.stem, _bin_request(cap, [float(x) for x in tok[2 : 2 + n]]), published


def cut_bins(kind: str, count: int = 3) -> Iterator[Case]:
    """Instances in the shape of two hard classes, cut from full bins so that the optimum is
    known (seeded: every run cuts the same). `bin2`, Scholl, Klein and Juergens' set 2 shape:
    capacity 1,000, 67 bins cut into three pieces in 260..420 with up to 6 % left over (no
    bin holds four pieces, so 67 is optimal). `HARD`, their set 3 shape: capacity 100,000,
    50 bins cut into four pieces in 20,000..35,000 with under 1,000 left over per bin (less
    than one bin in all, so 50 is optimal): 200 items."""
    for seed in range(count):
        rng = random.Random(f"{kind}-{seed}")
        cap, bins, pieces, low, high, waste = (
            (1000, 67, 3, 260, 420, 60) if kind == "bin2" else (100_000, 50, 4, 20_000, 35_000, 999)
        )
        sizes: list[int] = []
        while len(sizes) < pieces * bins:
            cut = [rng.randint(low, high) for _ in range(pieces - 1)]
            last = cap - rng.randint(0, waste) - sum(cut)
            if low <= last <= high:
                sizes += [*cut, last]
        rng.shuffle(sizes)
        yield f"{kind}-cut{seed}", _bin_request(cap, sizes), float(bins)


def _bin_request(cap: float, sizes: list[float]) -> dict[str, Any]:
    return {
        "problem": "packing",
        "packing": {
            "variant": "bin",
            "dimensions": ["size"],
            "bins": [{"id": "bin", "capacity": {"size": cap}, "quantity": len(sizes)}],
            "items": [{"id": f"i{j}", "size": {"size": s}} for j, s in enumerate(sizes)],
        },
    }


def mknap(path: Path) -> Iterator[Case]:
    """OR-Library mknap1: problems; per problem `n m optimum`, profits, m weight rows, m capacities."""
    tok = _numbers(path)
    count, pos = int(tok[0]), 1
    for p in range(count):
        n, m, best = int(tok[pos]), int(tok[pos + 1]), float(tok[pos + 2])
        pos += 3
        profits = [float(x) for x in tok[pos : pos + n]]
        pos += n
        weights = []
        for _ in range(m):
            weights.append([float(x) for x in tok[pos : pos + n]])
            pos += n
        caps = [float(x) for x in tok[pos : pos + m]]
        pos += m
        dims = [f"r{i}" for i in range(m)]
        request = {
            "problem": "packing",
            "packing": {
                "variant": "knapsack",
                "dimensions": dims,
                "bins": [{"id": "knapsack", "capacity": dict(zip(dims, caps))}],
                "items": [
                    {"id": f"j{j}", "size": {d: weights[i][j] for i, d in enumerate(dims)}, "value": profits[j]}
                    for j in range(n)
                ],
            },
        }
        yield f"mknap1-{p + 1}", request, best


def gap_orlib(path: Path, *, maximise: bool, published: float) -> Iterator[Case]:
    """OR-Library GAP, one problem per file: `m n`, m cost rows, m resource rows, m capacities."""
    tok = _numbers(path)
    m, n = int(tok[0]), int(tok[1])
    pos = 2
    cost = [[float(x) for x in tok[pos + i * n : pos + (i + 1) * n]] for i in range(m)]
    pos += m * n
    use = [[float(x) for x in tok[pos + i * n : pos + (i + 1) * n]] for i in range(m)]
    pos += m * n
    caps = [float(x) for x in tok[pos : pos + m]]
    key = "value" if maximise else "cost"
    block: dict[str, Any] = {
        "objective": "maximise_value" if maximise else "minimise_cost",
        "items": [{"id": f"job{j}"} for j in range(n)],
        "options": [{"id": f"agent{i}", "capacity": caps[i]} for i in range(m)],
        "pairs": [
            {"item": f"job{j}", "option": f"agent{i}", key: cost[i][j], "use": use[i][j]}
            for i in range(m)
            for j in range(n)
        ],
    }
    if maximise:
        block["assign_all"] = True
    yield f"{path.name}-{'max' if maximise else 'min'}", {"problem": "allocation", "allocation": block}, published


def scheduling_or_routing(name: str) -> Iterator[Case]:
    """Job shop, RCPSP, Solomon and CVRP files, read by bench/solve_instances_sched_routing.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from solve_instances_sched_routing import INSTANCES

    problem, loader, published = INSTANCES[name]
    yield name, {"problem": problem, problem: msgspec.to_builtins(loader())}, published


LOADERS: dict[str, Callable[[], Iterator[Case]]] = {
    "ft06": lambda: scheduling_or_routing("ft06"),
    "ft10": lambda: scheduling_or_routing("ft10"),
    "j301_1": lambda: scheduling_or_routing("j301_1"),
    "C101": lambda: scheduling_or_routing("C101"),
    "R101": lambda: scheduling_or_routing("R101"),
    "A-n32-k5": lambda: scheduling_or_routing("A-n32-k5"),
    "u120_00": lambda: binpack_orlib(BENCH / "binpacking" / "u120_00.txt"),
    "N1C1W1_A": lambda: binpack_bpp(BENCH / "binpacking" / "N1C1W1_A.BPP", 25),
    # Scholl, Klein and Juergens set 2 ("bin2", few large items per bin) and set 3 ("HARD")
    "N1W1B1R0": lambda: binpack_bpp(BENCH / "binpacking" / "N1W1B1R0.BPP", 18),
    "N2W3B1R7": lambda: binpack_bpp(BENCH / "binpacking" / "N2W3B1R7.BPP", 14),
    "N4W2B2R6": lambda: binpack_bpp(BENCH / "binpacking" / "N4W2B2R6.BPP", 103),
    "HARD0": lambda: binpack_bpp(BENCH / "binpacking" / "HARD0.BPP", 56),
    "HARD4": lambda: binpack_bpp(BENCH / "binpacking" / "HARD4.BPP", 57),
    "HARD7": lambda: binpack_bpp(BENCH / "binpacking" / "HARD7.BPP", 55),
    "bin2-cut": lambda: cut_bins("bin2"),
    "HARD-cut": lambda: cut_bins("HARD"),
    "mknap1": lambda: mknap(BENCH / "knapsack" / "mknap1.txt"),
    "gap1-0-min": lambda: gap_orlib(BENCH / "gap" / "gap1-0", maximise=False, published=261),
    "gap1-0-max": lambda: gap_orlib(BENCH / "gap" / "gap1-0", maximise=True, published=336),
}


def run_case(instance: str, request: dict[str, Any], published: float, time_limit: int) -> dict[str, Any]:
    from tollway_solve import tool
    from tollway_solve.request import SolveRequest

    value = msgspec.convert({**request, "time_limit_s": time_limit}, SolveRequest, strict=True)
    tool.check(value)  # refused inputs raise here, as they would before payment
    started = time.monotonic()
    try:
        out = tool.run(value)
        status, objective = out.status, out.objective_value
    except tool.SolveFailed as exc:
        status, objective = f"failed: {exc.message}", None
    seconds = time.monotonic() - started
    gap = (
        None
        if objective is None or published is None
        else round(100 * abs(objective - published) / max(1e-9, abs(published)), 3)
    )
    row = {
        "instance": instance,
        "problem": request["problem"],
        "status": status,
        "objective": objective,
        "published": published,
        "gap_pct": gap,
        "seconds": round(seconds, 2),
    }
    if request["problem"] == "packing" and status != "optimal" and objective is not None:
        row["bound"] = out.bound
    if request["problem"] == "packing" and request["packing"]["variant"] == "bin":
        row.update({"anchor": "ffd", "anchor_objective": ffd_bins(request["packing"])})
    if request["problem"] == "routing":
        row.update(routing_figures(instance, value, out if objective is not None else None, objective, time_limit))
    return row


def ffd_bins(block: dict[str, Any]) -> int | None:
    """The anchor of one-dimensional bin rows: plain first fit decreasing over units, the bins
    it opens (None for other shapes)."""
    if len(block["dimensions"]) != 1 or len(block["bins"]) != 1:
        return None
    dim = block["dimensions"][0]
    cap = block["bins"][0]["capacity"][dim]
    room: list[float] = []
    units = [it["size"].get(dim, 0) for it in block["items"] for _ in range(it.get("quantity", 1))]
    for size in sorted(units, reverse=True):
        at = next((i for i, r in enumerate(room) if r >= size), None)
        if at is None:
            room.append(cap - size)
        else:
            room[at] -= size
    return len(room)


def routing_figures(instance: str, value: Any, out: Any, objective: float | None, time_limit: int) -> dict[str, Any]:
    """The tool's vehicle count beside the best-known fleet, and plain OR-Tools routing with
    guided local search over the same instance and time limit (bench/routing_baseline.py) with
    the ratio of objectives."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from routing_baseline import ortools_gls
    from solve_instances_sched_routing import PUBLISHED_VEHICLES

    base = ortools_gls(value.routing, time_limit)
    ratio = None if objective is None or not base["objective"] else round(objective / base["objective"], 4)
    return {
        "vehicles": out.solution["vehicles_used"] if out is not None else None,
        "published_vehicles": PUBLISHED_VEHICLES.get(instance),
        "baseline": "ortools-gls",
        "baseline_vehicles": base["vehicles"],
        "baseline_objective": base["objective"],
        "ratio_to_baseline": ratio,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=int, default=30)
    parser.add_argument("names", nargs="*", help=f"loaders to run (default all): {', '.join(LOADERS)}")
    args = parser.parse_args(argv)
    for name in args.names or list(LOADERS):
        for instance, request, published in LOADERS[name]():
            print(json.dumps(run_case(instance, request, published, args.time_limit)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
