"""The `predict` tool: one paid job (X-Quote-ID, Idempotency-Key required, 202
then polling) whose `model` is `simulation` or `forecast`. Validation (every
limit of docs/predict.md, expressions parsed and compiled) and pricing happen before
payment; `run` executes in the worker's process pool. A timeout returns the
partial work and stays charged; a failure is refunded.
"""

from __future__ import annotations

from typing import Any

from tollway import Example, Refusal, Tool, ToolError

from . import request as request_mod
from . import simulation
from .errors import InputProblem
from .pricing import price_micro
from .request import TIME_LIMIT_MAX, TIME_LIMIT_MIN, PredictRequest
from .response import PredictResponse

MODELS = ("simulation", "forecast")


class PredictFailed(ToolError):
    """A failure raised inside the process pool: picklable with all its fields."""

    def __reduce__(self) -> Any:
        return (PredictFailed, (self.code, self.message, self.status))


def refuse(exc: InputProblem) -> Refusal:
    """400 `invalid_input` with the specific `code` (and, for expressions, `position`)."""
    detail: dict[str, Any] = {"field": exc.field, "message": exc.message}
    extra: dict[str, Any] = {"code": exc.code}
    if exc.position is not None:
        detail["position"] = exc.position
        extra["position"] = exc.position
    return Refusal("invalid_input", f"{exc.field}: {exc.message}", details=[detail], extra=extra)


def _forecast() -> Any:
    mod = request_mod.forecast_module
    if mod is None or not all(hasattr(mod, n) for n in ("ForecastBlock", "validate", "size", "run_forecast")):
        return None
    return mod


def _block(value: Any) -> Any:
    if value.model == "forecast" and _forecast() is None:
        raise InputProblem("unsupported_model", "model 'forecast' is not available on this server yet", "model")
    block = getattr(value, value.model)
    if block is None:
        raise InputProblem("missing_block", f"model {value.model!r} needs a {value.model!r} block", value.model)
    return block


def check(value: Any) -> None:
    """Everything refused before payment (the kernel calls it before quoting)."""
    try:
        if not TIME_LIMIT_MIN <= value.time_limit_s <= TIME_LIMIT_MAX:
            raise InputProblem(
                "bad_time_limit",
                f"time_limit_s must be an integer from {TIME_LIMIT_MIN} to {TIME_LIMIT_MAX}",
                "time_limit_s",
            )
        for other in MODELS:
            if other != value.model and getattr(value, other) is not None:
                raise InputProblem(
                    "unexpected_block", f"a {value.model!r} request takes only the {value.model!r} block", other
                )
        block = _block(value)
        if value.model == "simulation":
            simulation.validate(block)
        else:
            _forecast().validate(block)
    except InputProblem as exc:
        raise refuse(exc) from None


def size_units(value: Any) -> int:
    block = _block(value)
    if value.model == "simulation":
        return simulation.size(block)
    return int(_forecast().size(block))


def price(value: Any) -> int:
    return price_micro(size_units(value), value.time_limit_s)


def run(value: Any) -> PredictResponse:
    """Runs in the worker's process pool: a plain function of the input."""
    try:
        block = _block(value)
        if value.model == "simulation":
            out = simulation.run_simulation(block, value.time_limit_s)
            version = simulation.VERSION
        else:
            mod = _forecast()
            out = mod.run_forecast(block, float(value.time_limit_s))
            version = str(getattr(mod, "VERSION", "forecast-1"))
    except InputProblem as exc:  # the check runs before payment; this is a safety net
        raise PredictFailed("invalid_input", f"{exc.field}: {exc.message}. Nothing was charged.", 400) from None
    except (MemoryError, FloatingPointError, ValueError, ArithmeticError) as exc:
        raise PredictFailed(
            "internal_error", f"The {value.model} run failed ({type(exc).__name__}). Nothing was charged.", 500
        ) from None
    status = out.get("status")
    if status not in ("complete", "timeout"):
        raise PredictFailed(
            "internal_error", f"The {value.model} run returned status {status!r}. Nothing was charged.", 500
        )
    meta = out.get("meta")
    return PredictResponse(
        model=value.model,
        version=version,
        status=status,
        prediction=out.get("prediction"),
        uncertainty=out.get("uncertainty"),
        checks=out.get("checks", []),
        meta=meta if meta is not None else {},
    )


EXAMPLES = (
    Example(
        "Simulation: profit of a product launch under uncertain demand, price and cost",
        {
            "model": "simulation",
            "time_limit_s": 10,
            "simulation": {
                "runs": 10_000,
                "seed": 42,
                "percentiles": [5, 95],
                "variables": [
                    {"id": "demand", "distribution": {"kind": "normal", "mean": 1000, "sd": 150}},
                    {"id": "price", "distribution": {"kind": "triangular", "min": 8, "mode": 10, "max": 13}},
                    {"id": "unit_cost", "distribution": {"kind": "uniform", "min": 5, "max": 7}},
                    {"id": "delay", "distribution": {"kind": "bernoulli", "p": 0.2}},
                ],
                "outputs": [
                    {"id": "units", "expression": "max(0, demand) * if(delay, 0.7, 1)"},
                    {"id": "profit", "expression": "units * (price - unit_cost) - 2000"},
                    {"id": "loss", "expression": "profit < 0"},
                ],
            },
        },
    ),
)


PREDICT = Tool(
    name="predict",
    path="/v1/tools/predict",
    title="Monte Carlo simulation and time-series forecasting",
    summary="A seeded Monte Carlo simulation of uncertain variables through output expressions, or a backtested time-series forecast.",
    description=(
        "Runs a seeded Monte Carlo simulation of up to 50 uncertain variables through up to 10 output expressions "
        "(a small safe language: + - * / ^, comparisons, min max abs sqrt exp log floor ceil clamp if), or forecasts "
        "a time series with backtested model selection. Returns model, version, status (complete or timeout with "
        "partial work), prediction, uncertainty, checks and meta. Needs an idempotency key and runs as a job. Invalid "
        "input is refused before payment with invalid_input and a specific code (expression errors carry the "
        "character position)."
    ),
    category="infrastructure",
    subcategory="predict",
    input_type=PredictRequest,
    output_type=PredictResponse,
    run=run,
    price=price,
    family="predict",
    mode="job",
    cpu_bound=True,
    idempotency="required",
    payment_header="payment-signature",
    rate_limit="paid",
    shape_error="invalid_input",
    examples=EXAMPLES,
    check=check,
    # the longest time cap plus sampling the last chunk, statistics and pool start-up
    time_limit_s=TIME_LIMIT_MAX + 60,
    refund_failed_jobs=True,
)
