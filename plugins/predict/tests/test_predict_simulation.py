"""Simulation: the block's limits and parameter rules, sampling, discarding
non-finite runs, statistics, bit-for-bit reproducibility and the time cap
(deterministic: a zero cap stops after the first chunk, no wall-clock timing)."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import numpy as np
import pytest

from tollway_predict import simulation
from tollway_predict.errors import InputProblem

BASE: dict[str, Any] = {
    "runs": 2000,
    "seed": 7,
    "percentiles": [5, 50, 95],
    "variables": [
        {"id": "x", "distribution": {"kind": "normal", "mean": 10, "sd": 2}},
        {"id": "u", "distribution": {"kind": "uniform", "min": 0, "max": 1}},
    ],
    "outputs": [{"id": "y", "expression": "x * 2 + u"}],
}


def block(**changes: Any) -> simulation.SimulationBlock:
    body = copy.deepcopy(BASE)
    body.update(changes)
    return msgspec.convert(body, simulation.SimulationBlock, strict=True)


def refused(**changes: Any) -> InputProblem:
    with pytest.raises(InputProblem) as err:
        simulation.validate(block(**changes))
    return err.value


def var(kind: str, **params: Any) -> dict[str, Any]:
    return {"id": "v", "distribution": {"kind": kind, **params}}


def test_limits() -> None:
    assert (
        block(runs=10_000).runs == 10_000
        and msgspec.convert({k: v for k, v in BASE.items() if k != "runs"}, simulation.SimulationBlock).runs == 10_000
    )
    assert refused(runs=99).code == "bad_runs" and refused(runs=100_001).code == "bad_runs"
    simulation.validate(block(runs=100)) and simulation.validate(block(runs=100_000))
    assert refused(seed=-1).code == "bad_seed"
    assert refused(percentiles=list(range(21))).code == "too_many_percentiles"
    assert refused(percentiles=[101]).code == "bad_percentile" and refused(percentiles=[5, 5]).code == "bad_percentile"
    many = [{"id": f"v{i}", "distribution": {"kind": "fixed", "value": i}} for i in range(51)]
    err = refused(variables=many)
    assert err.code == "too_many_variables" and err.field == "simulation.variables"
    simulation.validate(block(variables=many[:50], outputs=[{"id": "y", "expression": "v0 + v49"}]))
    outs = [{"id": f"o{i}", "expression": "x"} for i in range(11)]
    assert refused(outputs=outs).code == "too_many_outputs"
    simulation.validate(block(outputs=outs[:10]))
    assert refused(variables=[]).code == "no_variables" and refused(outputs=[]).code == "no_outputs"
    err = refused(outputs=[{"id": "y", "expression": "x + " * 300 + "1"}])
    assert err.code == "expression_too_long" and err.field == "simulation.outputs[0].expression"


def test_ids() -> None:
    assert refused(outputs=[{"id": "x", "expression": "1"}]).code == "duplicate_id"
    assert refused(outputs=[{"id": "2y", "expression": "1"}]).code == "bad_id"
    assert refused(outputs=[{"id": "max", "expression": "1"}]).code == "reserved_id"
    err = refused(outputs=[{"id": "y", "expression": "x + zz"}])
    assert (err.code, err.position, err.field) == ("unknown_name", 4, "simulation.outputs[0].expression")


@pytest.mark.parametrize(
    ("dist", "field"),
    [
        (var("uniform", min=2, max=1), "min"),
        (var("normal", mean=0, sd=-1), "sd"),
        (var("lognormal", log_mean=0, log_sd=-0.1), "log_sd"),
        (var("triangular", min=0, mode=3, max=2), "mode"),
        (var("bernoulli", p=1.5), "p"),
        (var("discrete", values=[1, 2], weights=[1]), "weights"),
        (var("discrete", values=[1, 2], weights=[1, -1]), "weights"),
        (var("discrete", values=[1, 2], weights=[0, 0]), "weights"),
        (var("discrete", values=[], weights=[]), "values"),
        (var("discrete", values=list(range(101)), weights=[1] * 101), "values"),
    ],
)
def test_parameter_rules(dist: dict[str, Any], field: str) -> None:
    err = refused(variables=[dist, *BASE["variables"]])
    assert (
        err.code in ("bad_parameter", "too_many_values")
        and err.field == f"simulation.variables[0].distribution.{field}"
    )


def test_distribution_shapes_are_strict() -> None:
    for bad in (var("normal", mean=0), var("normal", mean=0, sd=1, extra=2), var("gamma", shape=1)):
        with pytest.raises(msgspec.ValidationError):
            block(variables=[bad])


def test_distributions_sample_what_they_say() -> None:
    variables = [
        {"id": "f", "distribution": {"kind": "fixed", "value": 3.5}},
        {"id": "u", "distribution": {"kind": "uniform", "min": 2, "max": 4}},
        {"id": "n", "distribution": {"kind": "normal", "mean": 5, "sd": 2}},
        {"id": "l", "distribution": {"kind": "lognormal", "log_mean": 0, "log_sd": 0.5}},
        {"id": "t", "distribution": {"kind": "triangular", "min": 0, "mode": 1, "max": 5}},
        {"id": "t0", "distribution": {"kind": "triangular", "min": 2, "mode": 2, "max": 2}},
        {"id": "b", "distribution": {"kind": "bernoulli", "p": 0.25}},
        {"id": "d", "distribution": {"kind": "discrete", "values": [1, 10, 100], "weights": [0, 3, 1]}},
    ]
    outputs = [{"id": f"o_{v['id']}", "expression": v["id"]} for v in variables]
    out = simulation.run_simulation(block(runs=100_000, variables=variables, outputs=outputs, percentiles=[]), 120)
    mean = {p["id"][2:]: p["mean"] for p in out["prediction"]}
    unc = {u["id"][2:]: u for u in out["uncertainty"]}
    assert mean["f"] == 3.5 and unc["f"]["sd"] == 0 and mean["t0"] == 2
    assert abs(mean["u"] - 3) < 0.02 and unc["u"]["min"] >= 2 and unc["u"]["max"] <= 4
    assert abs(mean["n"] - 5) < 0.03 and abs(unc["n"]["sd"] - 2) < 0.03
    assert abs(mean["l"] - np.exp(0.125)) < 0.01
    assert abs(mean["t"] - 2) < 0.02 and unc["t"]["min"] >= 0 and unc["t"]["max"] <= 5
    assert abs(mean["b"] - 0.25) < 0.01 and {unc["b"]["min"], unc["b"]["max"]} == {0.0, 1.0}
    assert abs(mean["d"] - 32.5) < 0.5 and unc["d"]["min"] == 10 and unc["d"]["max"] == 100  # weight 0 never drawn


def test_statistics_match_numpy_on_the_same_draws() -> None:
    b = block(runs=25_000)
    programs = simulation.validate(b)
    draws = np.concatenate(
        [simulation.chunk_values(b, programs, 7, i, n)[0] for i, n in ((0, 10_000), (1, 10_000), (2, 5_000))]
    )
    out = simulation.run_simulation(b, 120)
    p, u = out["prediction"][0], out["uncertainty"][0]
    assert p["mean"] == float(np.mean(draws)) and p["median"] == float(np.median(draws))
    assert u["sd"] == float(np.std(draws, ddof=1)) and u["mean_standard_error"] == pytest.approx(
        u["sd"] / np.sqrt(25_000)
    )
    assert (u["min"], u["max"]) == (float(draws.min()), float(draws.max()))
    assert [q["value"] for q in u["percentiles"]] == [float(v) for v in np.percentile(draws, [5, 50, 95])]
    assert [q["p"] for q in u["percentiles"]] == [5, 50, 95]
    assert out["status"] == "complete" and out["meta"]["runs_completed"] == out["meta"]["runs_used"] == 25_000


def test_non_finite_runs_are_discarded_and_counted() -> None:
    b = block(
        runs=5000, outputs=[{"id": "y", "expression": "log(x - 10)"}, {"id": "z", "expression": "if(x > 10, 1, 0)"}]
    )
    programs = simulation.validate(b)
    x_pos = simulation.chunk_values(b, programs, 7, 0, 5000)[1]  # z: 1 where x > 10
    expected_kept = int(x_pos.sum())
    out = simulation.run_simulation(b, 120)
    meta = out["meta"]
    assert meta["runs_used"] == expected_kept and meta["runs_discarded"] == 5000 - expected_kept > 0
    assert meta["discarded_by_output"] == {"y": 5000 - expected_kept, "z": 0}
    assert out["checks"][0] == {
        "name": "non_finite_runs_discarded",
        "count": 5000 - expected_kept,
        "detail": out["checks"][0]["detail"],
    }
    assert out["prediction"][1]["mean"] == 1.0  # statistics only over kept runs, for every output


def test_lazy_if_never_discards_a_run() -> None:
    b = block(outputs=[{"id": "y", "expression": "if(x > 10, log(x - 10), log(10 - x))"}])
    assert simulation.run_simulation(b, 120)["meta"]["runs_discarded"] == 0


def test_all_runs_discarded_gives_null_statistics() -> None:
    out = simulation.run_simulation(block(outputs=[{"id": "y", "expression": "1 / 0"}]), 120)
    assert (
        out["meta"]["runs_used"] == 0 and out["prediction"][0]["mean"] is None and out["uncertainty"][0]["sd"] is None
    )


def _stable(out: dict[str, Any]) -> str:
    out = copy.deepcopy(out)
    out["meta"].pop("elapsed_s")
    return json.dumps(out, sort_keys=True)


def test_same_scenario_seed_and_version_reproduce_bit_for_bit() -> None:
    b = block(
        runs=23_456,
        outputs=[{"id": "y", "expression": "x * 2 + u"}, {"id": "z", "expression": "sqrt(y) ^ 1.5 - exp(u)"}],
    )
    first, second = simulation.run_simulation(b, 120), simulation.run_simulation(b, 120)
    assert _stable(first) == _stable(second)
    other = simulation.run_simulation(msgspec.structs.replace(b, seed=8), 120)
    assert other["prediction"] != first["prediction"]
    assert simulation.VERSION.startswith("simulation-1/numpy-")


def test_omitted_seed_is_chosen_returned_and_reproduces() -> None:
    out = simulation.run_simulation(block(seed=None), 120)
    seed = out["meta"]["seed"]
    assert isinstance(seed, int) and 0 <= seed <= simulation.SEED_MAX
    assert _stable(simulation.run_simulation(block(seed=seed), 120)) == _stable(out)


def test_time_cap_returns_partial_statistics_of_completed_chunks() -> None:
    b = block(runs=35_000)
    out = simulation.run_simulation(b, 0)  # the cap has passed once the first chunk is done
    assert out["status"] == "timeout"
    assert out["meta"]["runs_completed"] == simulation.CHUNK and out["meta"]["runs_requested"] == 35_000
    assert out["checks"][-1]["name"] == "time_limit" and out["checks"][-1]["count"] == 25_000
    # exactly the statistics of the first chunk: the same as a 10,000-run scenario with that seed
    first_chunk = simulation.run_simulation(block(runs=simulation.CHUNK), 120)
    assert out["prediction"] == first_chunk["prediction"] and out["uncertainty"] == first_chunk["uncertainty"]
    assert first_chunk["status"] == "complete"


def test_size() -> None:
    assert simulation.size(block(runs=1000)) == 1000 * 3
