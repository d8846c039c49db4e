"""Simulation speed: 10,000 runs x 50 variables x 10 outputs of moderate
expressions, and 100,000 runs of the same scenario, each timed end to end in
this process: validation, parsing and compiling the expressions, sampling,
evaluation and statistics (what the `predict` job's `run` does, without the
job machinery). Each size is run a few times; the best time is reported.

Prints one JSON line: {"ms_10k": ..., "ms_100k": ...}. Targets: <= 50 ms and
<= 500 ms on the reference machine.

Run: `.venv/bin/python bench/simulate.py [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import json
import time

import msgspec

from tollway_predict import simulation

KINDS = (
    {"kind": "normal", "mean": 100, "sd": 15},
    {"kind": "uniform", "min": 0.5, "max": 1.5},
    {"kind": "lognormal", "log_mean": 0.0, "log_sd": 0.25},
    {"kind": "triangular", "min": 1, "mode": 2, "max": 4},
    {"kind": "bernoulli", "p": 0.3},
    {"kind": "discrete", "values": [1, 2, 3, 5, 8], "weights": [5, 4, 3, 2, 1]},
    {"kind": "fixed", "value": 7.5},
)

EXPRESSIONS = (
    "v0 * v1 + v2 * v3 - v4 * 10 + v5",
    "max(0, v6 * v7 - v8) + sqrt(abs(v9 - v10)) * v11",
    "if(v12 > 0.5, v13 * 1.1, v14 * 0.9) + clamp(v15, 0, 100) / (1 + v16)",
    "log(1 + abs(v17 * v18)) + exp(-v19 / 10) * v20 ^ 2",
    "min(v21, v22, v23) + floor(v24 * 3) - ceil(v25) + (v26 - v27) * v28",
    "o0 * 0.3 + o1 * 0.7 - v29 / (v30 + 1)",
    "if(o2 >= o3, o2 - o3, 0) + v31 * v32 - v33",
    "(v34 + v35 + v36) / 3 * (1 - v37 / 200) + v38 ^ 0.5",
    "clamp(o5 + o6 - v39 * v40, -1000, 1000) + max(v41, v42) * v43",
    "o4 + o7 * (v44 - v45) / (abs(v46) + 1) + (v47 > v48) * v49",
)


def scenario(runs: int) -> simulation.SimulationBlock:
    body = {
        "runs": runs,
        "seed": 12345,
        "percentiles": [1, 5, 10, 25, 75, 90, 95, 99],
        "variables": [{"id": f"v{i}", "distribution": KINDS[i % len(KINDS)]} for i in range(50)],
        "outputs": [{"id": f"o{k}", "expression": e} for k, e in enumerate(EXPRESSIONS)],
    }
    return msgspec.convert(body, simulation.SimulationBlock, strict=True)


def best_ms(runs: int, repeat: int) -> float:
    block = scenario(runs)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        programs = simulation.validate(block)
        out = simulation.run_simulation(block, 120, programs=programs)
        best = min(best, (time.perf_counter() - t0) * 1000)
        assert out["status"] == "complete" and out["meta"]["runs_completed"] == runs
    return round(best, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    best_ms(10_000, 2)  # warm-up: imports, NumPy dispatch
    print(json.dumps({"ms_10k": best_ms(10_000, args.repeat), "ms_100k": best_ms(100_000, args.repeat)}))


if __name__ == "__main__":
    main()
