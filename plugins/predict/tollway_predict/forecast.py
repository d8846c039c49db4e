"""`model: forecast` — the forecast block, its checks before payment, its price size
and the forecast itself. Pure and picklable: no I/O, no globals mutated.

Pipeline of `run_forecast`:
1. time axis (forecast_time): step, missing steps (linearly interpolated), frequency;
2. seasonal period: given, or the frequency's natural cycle; dropped (reported) when
   the series has fewer than two full periods;
3. fit window: at most the last max(FIT_WINDOW, 4 m) points are used for fitting
   (reported in meta);
4. rolling-origin backtest (forecast_backtest): every candidate is fitted at up to
   three origins, each followed by a full horizon, and scored there by an OWA-like
   score (sMAPE and MASE each relative to naive2's at the same origin), averaged;
5. every model-based candidate scored is refitted on the whole window and the
   forecast is their pointwise median (with fewer than three, the best are combined
   with inverse-score weights; a cycle of 2 to 12 adds the airline seasonal ARIMA of
   forecast_sarima); monthly, quarterly, weekly, yearly and no-frequency series combine
   only the members forecast_choice lists for them, by their median, mean or trimmed mean
   (chosen across series of that frequency; monthly and quarterly ones add the damped
   Holt-Winters form of forecast_ets, monthly ones the temporal-aggregation member of
   forecast_aggregation, yearly ones the optimised Theta models of
   forecast_theta); for a cycle longer than the
   seasonal ETS takes (hourly 24) the seasonal naive, the airline model or ARIMA replaces the
   median when it scored better on the backtest;
   one `forecast_models.Fits` per forecast shares the ETS fits among the candidates;
   interval half-widths are the combined model sd times a multiplier calibrated on the
   backtest errors (split-conformal quantile of |error| / sd);
6. forecasts and bounds are clipped at `floor` (reported).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Annotated

import msgspec
import numpy as np
from threadpoolctl import threadpool_limits

from . import forecast_aggregation as fa
from . import forecast_backtest as fb
from . import forecast_choice as fc
from . import forecast_ets as fe
from . import forecast_models as fm
from . import forecast_sarima as fs
from .bounds import REAL_MAX, Real, shown
from .errors import InputProblem
from .forecast_time import FREQUENCIES, NATURAL_PERIOD, build_axis

VERSION = "forecast-8"
MIN_POINTS, MAX_POINTS = 8, 10_000
MAX_HORIZON = 365
MAX_LEVELS = 5
FIT_WINDOW = 500


class Point(msgspec.Struct, forbid_unknown_fields=True):
    # an integer index, or an ISO 8601 date or date-time
    t: (
        Annotated[int, msgspec.Meta(ge=-REAL_MAX, le=REAL_MAX)]
        | Annotated[str, msgspec.Meta(max_length=40, extra_json_schema={"minLength": 4})]
    )
    y: Real


Level = Annotated[float, shown(exclusiveMinimum=0, exclusiveMaximum=100)]  # invalid_interval_level


class ForecastBlock(msgspec.Struct, forbid_unknown_fields=True):
    series: Annotated[list[Point], shown(minItems=MIN_POINTS, maxItems=MAX_POINTS)]  # series_too_short, series_too_long
    horizon: Annotated[
        int, shown(minimum=1, maximum=MAX_HORIZON)
    ]  # horizon_out_of_range (and at most twice the series)
    frequency: Annotated[str, shown(enum=list(FREQUENCIES))] | None = None  # invalid_frequency
    interval_levels: Annotated[list[Level], shown(maxItems=MAX_LEVELS)] = msgspec.field(
        default_factory=lambda: [80.0, 95.0]
    )
    floor: Real | None = None
    seasonal_period: Annotated[int, shown(minimum=1, maximum=MAX_POINTS // 2)] | None = None  # invalid_seasonal_period


# ---------------------------------------------------------------- validation


def _prepare(block: ForecastBlock):
    n = len(block.series)
    if n < MIN_POINTS:
        raise InputProblem("series_too_short", f"series needs at least {MIN_POINTS} points, got {n}", "series")
    if n > MAX_POINTS:
        raise InputProblem("series_too_long", f"series allows at most {MAX_POINTS} points, got {n}", "series")
    for i, p in enumerate(block.series):
        if not (isinstance(p.y, (int, float)) and math.isfinite(p.y)):
            raise InputProblem("non_finite_value", "y must be a finite number", f"series[{i}].y")
    h = block.horizon
    if not isinstance(h, int) or isinstance(h, bool) or not 1 <= h <= MAX_HORIZON:
        raise InputProblem("horizon_out_of_range", f"horizon must be 1 to {MAX_HORIZON} steps", "horizon")
    if h > 2 * n:
        raise InputProblem("horizon_too_long", f"horizon may be at most twice the series length ({2 * n})", "horizon")
    if block.frequency is not None and block.frequency not in FREQUENCIES:
        raise InputProblem("invalid_frequency", f"frequency must be one of {', '.join(FREQUENCIES)}", "frequency")
    levels = block.interval_levels
    if len(levels) > MAX_LEVELS:
        raise InputProblem("too_many_interval_levels", f"at most {MAX_LEVELS} interval levels", "interval_levels")
    for i, lv in enumerate(levels):
        if not (math.isfinite(lv) and 0 < lv < 100):
            raise InputProblem(
                "invalid_interval_level",
                "interval levels are percentages strictly between 0 and 100",
                f"interval_levels[{i}]",
            )
    if len(set(levels)) != len(levels):
        raise InputProblem("duplicate_interval_level", "interval levels must be distinct", "interval_levels")
    if block.floor is not None and not math.isfinite(block.floor):
        raise InputProblem("invalid_floor", "floor must be a finite number", "floor")
    sp = block.seasonal_period
    if sp is not None and (isinstance(sp, bool) or not 1 <= sp <= MAX_POINTS // 2):
        raise InputProblem(
            "invalid_seasonal_period", f"seasonal_period must be 1 to {MAX_POINTS // 2}", "seasonal_period"
        )
    axis = build_axis([p.t for p in block.series])
    if block.frequency is not None and axis.kind != "index" and axis.frequency != block.frequency:
        raise InputProblem(
            "frequency_mismatch",
            f"frequency {block.frequency!r} does not match the step of t "
            f"({axis.frequency or 'not one of ' + ', '.join(FREQUENCIES)})",
            "frequency",
        )
    filled = axis.positions[-1] + 1
    if filled > MAX_POINTS:
        raise InputProblem(
            "series_too_long",
            f"with its missing steps the series has {filled} points, more than {MAX_POINTS}",
            "series",
        )
    if filled > 2 * n:
        raise InputProblem(
            "too_many_missing_steps",
            f"at the step of t ({axis.step}) the series has {filled - n} missing steps, more than its {n} points",
            "series",
        )
    return axis


def validate(block: ForecastBlock) -> None:
    """Raise InputProblem (400 invalid_input, before payment) on any bad input."""
    _prepare(block)


def size(block: ForecastBlock) -> int:
    """Pricing size: series length times horizon."""
    return len(block.series) * block.horizon


# ---------------------------------------------------------------- fitting


def _fit_all(y: np.ndarray, h: int, m: int, names, deadline: float, ets=None, fits: fm.Fits | None = None):
    """Fit each named candidate on y; returns {name: (mean, sd)}, errors, whether the
    deadline cut the list short, and the seasonal adjustment used. `fits` shares the ETS
    fits among the candidates of one forecast."""
    season = fm.Season(y, m)
    z = season.adjust(y)
    out, errors, cut = {}, {}, False
    for name in names:
        if time.monotonic() > deadline and out:
            cut = True
            break
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if name == "seasonal_naive":
                    mean, sd = fm.seasonal_naive(y, h, m)
                elif name == "sarima":
                    mean, sd = fs.forecast(y, h, m)
                elif name == "ets_seasonal":
                    if ets is None or not fe.usable(y, m):
                        raise ValueError("too short for seasonal ETS")
                    mean, sd = fe.forecast(y, h, m, *ets)
                elif name == "holt_winters":
                    if not fe.usable(y, m):
                        raise ValueError("too short for Holt-Winters")
                    mean, sd = fe.forecast(y, h, m, fe.HOLT_WINTERS)
                elif name == "mapa":
                    mean, sd = season.restore(*fa.forecast(z, h, m, fits))
                else:
                    adjusted, fn = fm.CANDIDATES[name]
                    if adjusted:
                        mean, sd = fn(z, h, fits)
                        mean, sd = season.restore(np.asarray(mean, float), np.asarray(sd, float))
                    else:
                        mean, sd = fn(y, h, fits)
            mean, sd = np.asarray(mean, float), np.asarray(sd, float)
            if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))):
                raise ValueError("non-finite forecast")
            out[name] = (mean, np.maximum(sd, 0.0))
        except Exception as exc:  # noqa: BLE001 — a failing candidate is dropped, never the request
            errors[name] = f"{type(exc).__name__}: {exc}"[:200]
    return out, errors, cut, season


def _bounds(mean, sd, levels, q):
    bounds = {lv: (np.minimum(mean - q[lv] * sd, mean), np.maximum(mean + q[lv] * sd, mean)) for lv in levels}
    # nested intervals: a wider level never inside a narrower one
    for a, b in zip(sorted(levels), sorted(levels)[1:]):
        bounds[b] = (np.minimum(bounds[b][0], bounds[a][0]), np.maximum(bounds[b][1], bounds[a][1]))
    return bounds


def run_forecast(block: ForecastBlock, time_limit_s: float) -> dict:
    # BLAS on one thread: the models' matrices are tiny, and threads only add contention
    # (statsmodels' fits were several times slower with free BLAS threads on a busy machine)
    with threadpool_limits(1):
        return _run(block, time_limit_s)


def _run(block: ForecastBlock, time_limit_s: float) -> dict:
    start = time.monotonic()
    deadline = start + 0.9 * float(time_limit_s)
    axis = _prepare(block)
    checks: dict = {"interpolated": [], "seasonal_period_dropped": None, "clipped": 0, "fit_window": None}

    # 1. axis and interpolation
    n_full = axis.positions[-1] + 1
    pos = np.asarray(axis.positions)
    vals = np.asarray([float(p.y) for p in block.series])
    y_all = np.interp(np.arange(n_full), pos, vals)
    missing = sorted(set(range(n_full)) - set(axis.positions))
    checks["interpolated"] = [{"t": axis.label(k), "value": float(y_all[k])} for k in missing]

    # 2. frequency and seasonal period
    frequency = block.frequency or axis.frequency
    requested = block.seasonal_period or NATURAL_PERIOD.get(frequency or "", 1)
    m = requested
    if m > 1 and n_full < 2 * m:
        checks["seasonal_period_dropped"] = {
            "seasonal_period": m,
            "reason": f"fewer than two full periods ({n_full} < {2 * m} points)",
        }
        m = 1

    # 3. fit window
    window = max(FIT_WINDOW, 4 * m)
    y = y_all[-window:] if n_full > window else y_all
    if len(y) < n_full:
        checks["fit_window"] = {"points_used": len(y), "points_total": int(n_full)}
    h = block.horizon
    n = len(y)

    names = [k for k in fm.CANDIDATES if k != "seasonal_naive" or m > 1]
    chosen = fc.members(frequency, m)  # a frequency that combines only some members fits only those
    if chosen is not None:
        names = [k for k in names if k in fb.BENCHMARKS or k in chosen]
    else:
        names = [k for k in names if k not in fc.LISTED_ONLY]
    ets = None
    seasonal = fe.usable(y, m) and fm.Season(y, m).kind != "none"
    if (chosen is None or "ets_seasonal" in chosen) and seasonal and time.monotonic() < deadline:
        ets = fe.choose(y, m)
        if ets is not None:
            names.append("ets_seasonal")
    if chosen is not None and "holt_winters" in chosen and seasonal:  # only where forecast_choice lists it
        names.append("holt_winters")
    if chosen is not None and "mapa" in chosen:  # temporal aggregation (forecast_aggregation), where listed
        names.append("mapa")
    # a cycle the seasonal ETS takes (2 to 12): the airline model joins the median; a longer one with
    # a horizon covering a whole cycle (hourly 24): it may replace the median (below); weekly: a member
    long_cycle = m > fe.MAX_PERIOD and h >= m
    wanted = long_cycle or 1 < m <= fe.MAX_PERIOD if chosen is None else "sarima" in chosen and m > 1
    if wanted and fs.usable(y, m):
        names.append("sarima")

    # 4. rolling-origin backtest
    memo = fm.Fits()  # this forecast's ETS fits, shared by the candidates that fit the same model
    per_origin, trains, tests, fitted, errors, cut = [], [], [], [], {}, False
    for n_o in fb.origins(n, h, m):
        train, test = y[:n_o], y[n_o : n_o + h]
        fits, errs, cut, _ = _fit_all(train, len(test), m, names, deadline, ets, memo)
        errors.update(errs)
        per_origin.append(fb.score_origin(train, test, fits, m))
        trains.append(train)
        tests.append(test)
        fitted.append(fits)
        if cut or time.monotonic() > deadline:
            cut = cut or len(per_origin) < len(fb.origins(n, h, m))
            break
    scores = fb.average(per_origin)
    how, w = fc.combination(frequency, m, scores) or fb.combination(
        scores, [k for k in names if not (long_cycle and k in fb.LONG_CYCLE)]
    )
    w = w or {"naive": 1.0}
    # a cycle too long for the seasonal ETS (hourly 24): no member models the season itself, they all
    # share classical-decomposition indices averaged over the window; the seasonal naive (the last
    # cycle repeated) or the airline seasonal ARIMA replaces the median when it beat it on the
    # backtest, scored on whole cycles (h >= m)
    if how == "median" and long_cycle:
        median_score = fb.combined_score(trains, tests, fitted, w, how, m)
        if median_score is not None:
            pick = fb.long_cycle_pick(scores, median_score)
            if pick is not None:
                how, w = "weighted", {pick: 1.0}

    # 5. refit the chosen on the whole window, combine; calibrate the intervals
    final, errors2, cut2, season = _fit_all(
        y, h, m, list(w), math.inf if not cut else deadline + 0.1 * time_limit_s, ets, memo
    )
    if not final:  # cannot happen in practice: naive never fails
        final, *_ = _fit_all(y, h, m, ["naive"], math.inf)
        w = {"naive": 1.0}
    w = {k: v for k, v in w.items() if k in final}
    members = list(w)
    mean, sd = fb.combine(final, w, how)
    whole = [i for i, f in enumerate(fitted) if all(k in f for k in w)]  # origins where every member fitted
    z = fb.ratios([tests[i] for i in whole], [fb.combine(fitted[i], w, how) for i in whole])
    levels = list(block.interval_levels)
    q = {lv: fb.multiplier(z, lv) for lv in levels}
    bounds = _bounds(mean, sd, levels, q)

    # 6. floor
    if block.floor is not None:
        fl = float(block.floor)
        clipped = int(np.sum(mean < fl)) + sum(
            int(np.sum(lo < fl)) + int(np.sum(hi < fl)) for lo, hi in bounds.values()
        )
        mean = np.maximum(mean, fl)
        bounds = {lv: (np.maximum(lo, fl), np.maximum(hi, fl)) for lv, (lo, hi) in bounds.items()}
        checks["clipped"] = clipped

    labels = [axis.label(n_full - 1 + k) for k in range(1, h + 1)]
    key = lambda lv: f"{lv:g}"
    prediction = [{"t": t, "value": float(v)} for t, v in zip(labels, mean)]
    intervals = [
        {
            "t": t,
            "lower": {key(lv): float(bounds[lv][0][i]) for lv in levels},
            "upper": {key(lv): float(bounds[lv][1][i]) for lv in levels},
        }
        for i, t in enumerate(labels)
    ]
    status = "timeout" if (cut or cut2) else "complete"
    meta = {
        "method": members[0] if len(members) == 1 else f"{how}(" + ", ".join(members) + ")",
        "combination": how,
        "chosen": members,
        "candidates": {
            k: {"smape": round(v["smape"], 6), "mase": round(v["mase"], 6), "score": round(v["score"], 6)}
            for k, v in scores.items()
        },
        "failed": {**errors, **errors2},
        "not_scored": [k for k in names if k not in scores and k not in errors] if cut else [],
        "weights": {k: round(v, 6) for k, v in w.items()},
        "holdout": len(tests[0]) if tests else 0,
        "calibration_origins": len(whole),
        "origins": [int(n_full - n + n_o) for n_o in fb.origins(n, h, m)][: len(per_origin)],
        "interval_scale": {key(lv): round(q[lv], 6) for lv in levels},
        "seasonal_period": m,
        "seasonal_period_requested": requested,
        "seasonality": season.kind,
        "frequency": frequency,
        "frequency_inferred": block.frequency is None,
        "step": {
            "kind": axis.kind,
            "size": axis.step,
            "unit": {"index": "index", "calendar": "months", "fixed": "seconds"}[axis.kind],
        },
        "seconds": round(time.monotonic() - start, 4),
    }
    return {
        "model": "forecast",
        "version": VERSION,
        "status": status,
        "prediction": prediction,
        "uncertainty": {
            "levels": levels,
            "method": "backtest-calibrated, around the combined forecast",
            "intervals": intervals,
        },
        "checks": checks,
        "meta": meta,
    }
