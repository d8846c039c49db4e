"""Monte Carlo simulation (`model: simulation`): the block, its checks before
payment, and the run.

Runs are drawn and evaluated in fixed chunks of CHUNK runs; chunk `i` draws
from its own stream `PCG64(SeedSequence([seed, i]))`, variables in order, so
the numbers depend on the scenario, the seed and VERSION only (never on timing,
the machine's load or where a time cap stopped). Between chunks the deadline is
checked: when the next chunk would pass it the run stops with `status:
timeout` and the statistics of the chunks completed.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from typing import Annotated, Any, Literal

import msgspec
import numpy as np

from . import expression
from .bounds import NonNegative, Real, shown
from .errors import InputProblem

VERSION = f"simulation-1/numpy-{np.__version__}"  # the sampling streams may change with NumPy

RUNS_MIN, RUNS_MAX, RUNS_DEFAULT = 100, 100_000, 10_000
MAX_PERCENTILES = 20
MAX_VARIABLES = 50
MAX_OUTPUTS = 10
MAX_DISCRETE = 100
SEED_MAX = 2**63 - 1
DEFAULT_PERCENTILES = (5.0, 25.0, 75.0, 95.0)
CHUNK = 10_000
ID_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class _Dist(msgspec.Struct, tag_field="kind", forbid_unknown_fields=True, kw_only=True):
    pass


class Fixed(_Dist, tag="fixed"):
    value: Real


class Uniform(_Dist, tag="uniform"):
    min: Real
    max: Real


class Normal(_Dist, tag="normal"):
    mean: Real
    sd: NonNegative


class LogNormal(_Dist, tag="lognormal"):
    log_mean: Real
    log_sd: NonNegative


class Triangular(_Dist, tag="triangular"):
    min: Real
    mode: Real
    max: Real


class Bernoulli(_Dist, tag="bernoulli"):
    p: Annotated[float, shown(minimum=0, maximum=1)]


class Discrete(_Dist, tag="discrete"):
    values: Annotated[list[Real], shown(minItems=1, maxItems=MAX_DISCRETE)]
    weights: Annotated[list[NonNegative], shown(minItems=1, maxItems=MAX_DISCRETE)]


Distribution = Fixed | Uniform | Normal | LogNormal | Triangular | Bernoulli | Discrete

Ident = Annotated[str, shown(pattern=ID_PATTERN.pattern, minLength=1, maxLength=64)]  # bad_id


class Variable(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Ident
    distribution: Distribution


class Output(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Ident
    expression: Annotated[str, shown(minLength=1, maxLength=expression.MAX_LENGTH)]  # expression_too_long


class SimulationBlock(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`runs` 100..100,000 (default 10,000); `seed` (0..2^63-1, chosen when omitted);
    `percentiles` (up to 20, each 0..100; default 5, 25, 75, 95); `variables` (1..50);
    `outputs` (1..10, expression at most 1,000 characters)."""

    variables: Annotated[list[Variable], shown(minItems=1, maxItems=MAX_VARIABLES)]
    outputs: Annotated[list[Output], shown(minItems=1, maxItems=MAX_OUTPUTS)]
    runs: Annotated[int, shown(minimum=RUNS_MIN, maximum=RUNS_MAX)] = RUNS_DEFAULT
    seed: Annotated[int, shown(minimum=0, maximum=SEED_MAX)] | None = None
    percentiles: (
        Annotated[list[Annotated[float, shown(minimum=0, maximum=100)]], shown(maxItems=MAX_PERCENTILES)] | None
    ) = None


# -- validation (before payment) -------------------------------------------------------------
def _finite(x: float, field: str) -> None:
    if not math.isfinite(x):
        raise InputProblem("bad_parameter", "must be a finite number", field)


def _check_distribution(d: Any, field: str) -> None:
    for name in d.__struct_fields__:
        v = getattr(d, name)
        if isinstance(v, list):
            for k, x in enumerate(v):
                _finite(x, f"{field}.{name}[{k}]")
        else:
            _finite(v, f"{field}.{name}")
    if isinstance(d, Uniform) and d.min > d.max:
        raise InputProblem("bad_parameter", "uniform needs min <= max", f"{field}.min")
    if isinstance(d, Normal) and d.sd < 0:
        raise InputProblem("bad_parameter", "normal needs sd >= 0", f"{field}.sd")
    if isinstance(d, LogNormal) and d.log_sd < 0:
        raise InputProblem("bad_parameter", "lognormal needs log_sd >= 0", f"{field}.log_sd")
    if isinstance(d, Triangular) and not d.min <= d.mode <= d.max:
        raise InputProblem("bad_parameter", "triangular needs min <= mode <= max", f"{field}.mode")
    if isinstance(d, Bernoulli) and not 0 <= d.p <= 1:
        raise InputProblem("bad_parameter", "bernoulli needs 0 <= p <= 1", f"{field}.p")
    if isinstance(d, Discrete):
        if not 1 <= len(d.values) <= MAX_DISCRETE:
            raise InputProblem(
                "too_many_values" if d.values else "bad_parameter",
                f"discrete needs 1 to {MAX_DISCRETE} values",
                f"{field}.values",
            )
        if len(d.weights) != len(d.values):
            raise InputProblem("bad_parameter", "discrete needs as many weights as values", f"{field}.weights")
        if any(w < 0 for w in d.weights):
            raise InputProblem("bad_parameter", "discrete weights must be nonnegative", f"{field}.weights")
        if not sum(d.weights) > 0:
            raise InputProblem("bad_parameter", "discrete weights must not all be zero", f"{field}.weights")


def _check_id(ident: str, field: str, seen: set[str]) -> None:
    if not ID_PATTERN.match(ident):
        raise InputProblem("bad_id", "ids are 1 to 64 letters, digits or underscores, not starting with a digit", field)
    if ident in expression.FUNCTIONS:
        raise InputProblem("reserved_id", f"{ident!r} is a function name", field)
    if ident in seen:
        raise InputProblem(
            "duplicate_id", f"the id {ident!r} is used twice (variables and outputs share one namespace)", field
        )
    seen.add(ident)


def percentiles_of(block: SimulationBlock) -> list[float]:
    return list(DEFAULT_PERCENTILES) if block.percentiles is None else [float(p) for p in block.percentiles]


def validate(block: SimulationBlock, field: str = "simulation") -> list[expression.Program]:
    """Every refusal before payment; returns the compiled outputs."""
    if not RUNS_MIN <= block.runs <= RUNS_MAX:
        raise InputProblem("bad_runs", f"runs must be an integer from {RUNS_MIN} to {RUNS_MAX}", f"{field}.runs")
    if block.seed is not None and not 0 <= block.seed <= SEED_MAX:
        raise InputProblem("bad_seed", f"seed must be an integer from 0 to {SEED_MAX}", f"{field}.seed")
    if block.percentiles is not None:
        if len(block.percentiles) > MAX_PERCENTILES:
            raise InputProblem("too_many_percentiles", f"at most {MAX_PERCENTILES} percentiles", f"{field}.percentiles")
        for k, p in enumerate(block.percentiles):
            if not (math.isfinite(p) and 0 <= p <= 100):
                raise InputProblem(
                    "bad_percentile", "a percentile is a number from 0 to 100", f"{field}.percentiles[{k}]"
                )
        if len(set(block.percentiles)) != len(block.percentiles):
            raise InputProblem("bad_percentile", "percentiles must not repeat", f"{field}.percentiles")
    if not block.variables:
        raise InputProblem("no_variables", "at least one variable is needed", f"{field}.variables")
    if len(block.variables) > MAX_VARIABLES:
        raise InputProblem("too_many_variables", f"at most {MAX_VARIABLES} variables", f"{field}.variables")
    if not block.outputs:
        raise InputProblem("no_outputs", "at least one output is needed", f"{field}.outputs")
    if len(block.outputs) > MAX_OUTPUTS:
        raise InputProblem("too_many_outputs", f"at most {MAX_OUTPUTS} outputs", f"{field}.outputs")
    seen: set[str] = set()
    for k, v in enumerate(block.variables):
        _check_id(v.id, f"{field}.variables[{k}].id", seen)
        _check_distribution(v.distribution, f"{field}.variables[{k}].distribution")
    for k, o in enumerate(block.outputs):
        _check_id(o.id, f"{field}.outputs[{k}].id", seen)
    return expression.compile_outputs(
        [v.id for v in block.variables], [(o.id, o.expression) for o in block.outputs], f"{field}.outputs"
    )


def size(block: SimulationBlock) -> int:
    """The size of the work (docs/predict.md): runs times (variables + outputs)."""
    return int(block.runs) * (len(block.variables) + len(block.outputs))


# -- sampling --------------------------------------------------------------------------------
def _sample(d: Any, rng: np.random.Generator, n: int) -> np.ndarray:
    if isinstance(d, Fixed):
        return np.full(n, d.value)
    if isinstance(d, Uniform):
        return rng.uniform(d.min, d.max, n)
    if isinstance(d, Normal):
        return rng.normal(d.mean, d.sd, n)
    if isinstance(d, LogNormal):
        return rng.lognormal(d.log_mean, d.log_sd, n)
    if isinstance(d, Triangular):
        if d.min == d.max:
            return np.full(n, d.min)
        return rng.triangular(d.min, d.mode, d.max, n)
    if isinstance(d, Bernoulli):
        return (rng.random(n) < d.p).astype(np.float64)
    if isinstance(d, Discrete):
        w = np.asarray(d.weights, dtype=np.float64)
        cdf = np.cumsum(w / w.sum())
        cdf[-1] = 1.0
        idx = np.searchsorted(cdf, rng.random(n), side="right")
        return np.asarray(d.values, dtype=np.float64)[np.minimum(idx, len(d.values) - 1)]
    raise AssertionError(d)  # pragma: no cover


def chunk_values(
    block: SimulationBlock, programs: list[expression.Program], seed: int, index: int, n: int
) -> np.ndarray:
    """The outputs of chunk `index` (n runs): an array (outputs, n)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, index])))
    env: dict[str, np.ndarray] = {v.id: _sample(v.distribution, rng, n) for v in block.variables}
    out = np.empty((len(programs), n))
    for k, (o, prog) in enumerate(zip(block.outputs, programs)):
        out[k] = env[o.id] = prog.evaluate(env, n)
    return out


# -- statistics ------------------------------------------------------------------------------
def _stats(x: np.ndarray, percentiles: list[float]) -> dict[str, Any]:
    n = x.size
    if n == 0:
        return {
            "mean": None,
            "median": None,
            "sd": None,
            "mean_standard_error": None,
            "min": None,
            "max": None,
            "percentiles": [{"p": p, "value": None} for p in percentiles],
        }
    qs = np.percentile(x, [50.0, *percentiles]) if n else []
    mean = float(np.mean(x))
    sd = float(np.std(x, ddof=1)) if n > 1 else None
    return {
        "mean": mean,
        "median": float(qs[0]),
        "sd": sd,
        "mean_standard_error": sd / math.sqrt(n) if sd is not None else None,
        "min": float(np.min(x)),
        "max": float(np.max(x)),
        "percentiles": [{"p": p, "value": float(q)} for p, q in zip(percentiles, qs[1:])],
    }


def run_simulation(
    block: SimulationBlock, time_limit_s: float, *, programs: list[expression.Program] | None = None
) -> dict[str, Any]:
    """Returns {status, prediction, uncertainty, checks, meta} (see docs/predict.md)."""
    started = time.monotonic()
    deadline = started + float(time_limit_s)
    if programs is None:
        programs = validate(block)
    seed = int(block.seed) if block.seed is not None else secrets.randbelow(SEED_MAX + 1)
    percentiles = percentiles_of(block)
    pieces: list[np.ndarray] = []
    done = 0
    status: Literal["complete", "timeout"] = "complete"
    index = 0
    slowest = 0.0
    while done < block.runs:
        now = time.monotonic()
        if index > 0 and now + slowest > deadline:
            status = "timeout"
            break
        n = min(CHUNK, block.runs - done)
        pieces.append(chunk_values(block, programs, seed, index, n))
        slowest = max(slowest, time.monotonic() - now)
        done += n
        index += 1
    values = pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=1)
    finite = np.isfinite(values)
    keep = finite.all(axis=0)
    kept = int(keep.sum())
    discarded = done - kept
    by_output = {o.id: int(done - finite[k].sum()) for k, o in enumerate(block.outputs)}
    stats = [_stats(values[k][keep] if discarded else values[k], percentiles) for k in range(len(block.outputs))]
    prediction = [{"id": o.id, "mean": s["mean"], "median": s["median"]} for o, s in zip(block.outputs, stats)]
    uncertainty = [
        {"id": o.id, **{k: s[k] for k in ("sd", "mean_standard_error", "min", "max", "percentiles")}}
        for o, s in zip(block.outputs, stats)
    ]
    checks = [
        {
            "name": "non_finite_runs_discarded",
            "count": discarded,
            "detail": f"{discarded} of {done} runs had a non-finite output and were left out of the statistics",
        }
    ]
    if status == "timeout":
        checks.append(
            {
                "name": "time_limit",
                "count": block.runs - done,
                "detail": f"stopped at the {time_limit_s:g} s cap after {done} of {block.runs} runs",
            }
        )
    meta = {
        "seed": seed,
        "runs_requested": int(block.runs),
        "runs_completed": done,
        "runs_used": kept,
        "runs_discarded": discarded,
        "discarded_by_output": by_output,
        "percentiles": percentiles,
        "variables": len(block.variables),
        "outputs": len(block.outputs),
        "chunk_size": CHUNK,
        "elapsed_s": round(time.monotonic() - started, 4),
        "time_limit_s": time_limit_s,
    }
    return {"status": status, "prediction": prediction, "uncertainty": uncertainty, "checks": checks, "meta": meta}
