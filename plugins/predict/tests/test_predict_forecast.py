"""Forecast model: validation codes, time axis, seasonality handling, floor,
intervals, determinism. No timing assertions."""

from __future__ import annotations

import datetime as dt
import pickle

import msgspec
import numpy as np
import pytest

from tollway_predict import forecast_backtest as fb
from tollway_predict import forecast_choice as fc
from tollway_predict import forecast_models as fm
from tollway_predict.errors import InputProblem
from tollway_predict.forecast import ForecastBlock, Point, run_forecast, size, validate


def block(values, t=None, **kw):
    t = t if t is not None else list(range(len(values)))
    return ForecastBlock(series=[Point(t=a, y=float(b)) for a, b in zip(t, values)], **{"horizon": 4, **kw})


def monthly_dates(n, start=(2020, 1)):
    y, m = start
    out = []
    for _ in range(n):
        out.append(f"{y:04d}-{m:02d}-01")
        m += 1
        if m == 13:
            y, m = y + 1, 1
    return out


def seasonal_series(n, m=12, seed=0):
    rng = np.random.default_rng(seed)
    k = np.arange(n)
    return 100 + 0.5 * k + 20 * np.sin(2 * np.pi * k / m) + rng.normal(0, 1, n)


def code_of(b):
    with pytest.raises(InputProblem) as e:
        validate(b)
    return e.value.code, e.value.field


# ---------------------------------------------------------------- validation codes


@pytest.mark.parametrize(
    "make, code, field",
    [
        (lambda: block(range(7)), "series_too_short", "series"),
        (lambda: block(range(10_001)), "series_too_long", "series"),
        (lambda: block([1, 2, 3, float("nan"), 5, 6, 7, 8]), "non_finite_value", "series[3].y"),
        (lambda: block(range(10), horizon=0), "horizon_out_of_range", "horizon"),
        (lambda: block(range(400), horizon=366), "horizon_out_of_range", "horizon"),
        (lambda: block(range(10), horizon=21), "horizon_too_long", "horizon"),
        (lambda: block(range(10), frequency="fortnightly"), "invalid_frequency", "frequency"),
        (lambda: block(range(10), interval_levels=[80, 100]), "invalid_interval_level", "interval_levels[1]"),
        (lambda: block(range(10), interval_levels=[0]), "invalid_interval_level", "interval_levels[0]"),
        (lambda: block(range(10), interval_levels=[80, 80]), "duplicate_interval_level", "interval_levels"),
        (
            lambda: block(range(10), interval_levels=[10, 20, 30, 40, 50, 60]),
            "too_many_interval_levels",
            "interval_levels",
        ),
        (lambda: block(range(10), floor=float("inf")), "invalid_floor", "floor"),
        (lambda: block(range(10), seasonal_period=0), "invalid_seasonal_period", "seasonal_period"),
        (lambda: block(range(10), t=[0, 1, 2, 2, 4, 5, 6, 7, 8, 9]), "time_not_increasing", "series[3].t"),
        (lambda: block(range(10), t=[0, 2, 4, 7, 9, 11, 13, 15, 17, 19]), "irregular_step", "series[3].t"),
        (lambda: block(range(10), t=[0, 1, 5, 9, 13, 17, 21, 25, 29, 33]), "too_many_missing_steps", "series"),
        (lambda: block(range(10), t=list(range(9)) + ["2020-01-01"]), "mixed_time_types", "series[9].t"),
        (lambda: block(range(10), t=monthly_dates(9) + ["not a date"]), "invalid_time", "series[9].t"),
        (lambda: block(range(10), t=monthly_dates(10), frequency="daily"), "frequency_mismatch", "frequency"),
        (lambda: block(range(10), t=[0, 1, 2, 3, 4, 5, 6, 7, 8, 20_000]), "series_too_long", "series"),
    ],
)
def test_validation_codes(make, code, field):
    assert code_of(make()) == (code, field)


def test_valid_block_passes_and_size():
    b = block(range(20), horizon=5)
    assert validate(b) is None
    assert size(b) == 100


def test_block_decodes_from_json_with_defaults():
    raw = b'{"series": [' + b",".join(b'{"t": %d, "y": %d}' % (i, i) for i in range(10)) + b'], "horizon": 3}'
    b = msgspec.json.decode(raw, type=ForecastBlock)
    assert b.interval_levels == [80.0, 95.0] and b.frequency is None
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(raw[:-1] + b', "colour": 1}', type=ForecastBlock)


# ---------------------------------------------------------------- time axis


def test_missing_steps_interpolated_and_reported():
    t = list(range(12))
    del t[5]
    y = [float(v) * 2 for v in t]
    out = run_forecast(block(y, t=t), 10)
    assert out["checks"]["interpolated"] == [{"t": 5, "value": 10.0}]
    assert [p["t"] for p in out["prediction"]] == [12, 13, 14, 15]


def test_missing_month_interpolated_with_dates():
    dates = monthly_dates(14)
    y = list(range(14))
    del dates[6], y[6]
    out = run_forecast(block(y, t=dates), 10)
    assert out["checks"]["interpolated"] == [{"t": "2020-07-01", "value": 6.0}]
    assert out["meta"]["frequency"] == "monthly" and out["meta"]["frequency_inferred"]
    assert out["prediction"][0]["t"] == "2021-03-01"


@pytest.mark.parametrize(
    "t, freq, first_next",
    [
        (
            [f"2021-{q:02d}-01" for q in (1, 4, 7, 10)] + [f"2022-{q:02d}-01" for q in (1, 4, 7, 10)],
            "quarterly",
            "2023-01-01",
        ),
        ([f"{2000 + k}-06-30" for k in range(8)], "yearly", "2008-06-30"),
        ([(dt.date(2024, 1, 1) + dt.timedelta(days=k)).isoformat() for k in range(8)], "daily", "2024-01-09"),
        ([(dt.date(2024, 1, 1) + dt.timedelta(weeks=k)).isoformat() for k in range(8)], "weekly", "2024-02-26"),
        ([f"2024-03-01T{k:02d}:00:00" for k in range(8)], "hourly", "2024-03-01T08:00:00"),
        ([f"2024-03-01T{k:02d}:00:00Z" for k in range(8)], "hourly", "2024-03-01T08:00:00+00:00"),
        (
            [
                "2023-01-31",
                "2023-02-28",
                "2023-03-31",
                "2023-04-30",
                "2023-05-31",
                "2023-06-30",
                "2023-07-31",
                "2023-08-31",
            ],
            "monthly",
            "2023-09-30",
        ),
    ],
)
def test_frequency_inference(t, freq, first_next):
    out = run_forecast(block(np.linspace(10, 20, len(t)), t=t, horizon=2), 10)
    assert out["meta"]["frequency"] == freq
    assert out["prediction"][0]["t"] == first_next


def test_integer_index_has_no_inferred_frequency_but_accepts_one():
    out = run_forecast(block(range(10)), 10)
    assert out["meta"]["frequency"] is None and out["meta"]["seasonal_period"] == 1
    out = run_forecast(block(seasonal_series(40, 4), frequency="quarterly"), 10)
    assert out["meta"]["frequency"] == "quarterly" and out["meta"]["seasonal_period"] == 4


def test_integer_step_continues():
    out = run_forecast(block(range(10), t=list(range(100, 150, 5))), 10)
    assert [p["t"] for p in out["prediction"]] == [150, 155, 160, 165]


# ---------------------------------------------------------------- seasonality


def test_seasonal_period_dropped_without_two_full_periods():
    out = run_forecast(block(seasonal_series(20), t=monthly_dates(20)), 10)
    assert out["meta"]["seasonal_period"] == 1 and out["meta"]["seasonal_period_requested"] == 12
    assert out["checks"]["seasonal_period_dropped"]["seasonal_period"] == 12
    assert "seasonal_naive" not in out["meta"]["candidates"]


def test_seasonal_period_kept_and_used():
    out = run_forecast(block(seasonal_series(60), t=monthly_dates(60), horizon=12), 10)
    assert out["meta"]["seasonal_period"] == 12 and out["checks"]["seasonal_period_dropped"] is None
    assert out["meta"]["seasonality"] == "multiplicative"
    # the forecast follows the cycle: its peak month matches the series' peak month
    f = np.array([p["value"] for p in out["prediction"]])
    k = np.arange(60, 72)
    truth = 100 + 0.5 * k + 20 * np.sin(2 * np.pi * k / 12)
    assert np.mean(np.abs(f - truth)) < 4.0


def test_explicit_seasonal_period_overrides_default():
    out = run_forecast(block(seasonal_series(40, 5), seasonal_period=5), 10)
    assert out["meta"]["seasonal_period"] == 5 and out["meta"]["seasonality"] != "none"


def test_seasonality_test_and_indices():
    y = seasonal_series(48)
    assert fm.seasonality_test(y, 12)
    assert not fm.seasonality_test(np.arange(48.0), 1)
    idx = fm.seasonal_indices(y, 12, True)
    assert idx.shape == (12,) and abs(idx.mean() - 1) < 1e-12


# ---------------------------------------------------------------- floor, intervals


def test_floor_clips_forecast_and_bounds():
    y = np.linspace(50, 5, 30)
    out = run_forecast(block(y, horizon=20, floor=0.0), 10)
    vals = [p["value"] for p in out["prediction"]]
    assert min(vals) >= 0.0
    for iv in out["uncertainty"]["intervals"]:
        assert min(iv["lower"].values()) >= 0.0
    assert out["checks"]["clipped"] > 0
    unclipped = run_forecast(block(y, horizon=20), 10)
    assert min(p["value"] for p in unclipped["prediction"]) < 0
    assert unclipped["checks"]["clipped"] == 0


def test_interval_ordering_and_layout():
    out = run_forecast(block(seasonal_series(60), horizon=12, interval_levels=[95, 50, 80]), 10)
    u = out["uncertainty"]
    assert u["levels"] == [95, 50, 80]
    assert len(u["intervals"]) == 12
    for p, iv in zip(out["prediction"], u["intervals"]):
        assert p["t"] == iv["t"]
        lo, hi = iv["lower"], iv["upper"]
        assert lo["95"] <= lo["80"] <= lo["50"] <= p["value"] <= hi["50"] <= hi["80"] <= hi["95"]
        assert lo["95"] < hi["95"]
    widths = [iv["upper"]["95"] - iv["lower"]["95"] for iv in u["intervals"]]
    assert widths[-1] >= widths[0]


def test_no_interval_levels():
    out = run_forecast(block(range(10), interval_levels=[]), 10)
    assert out["uncertainty"]["levels"] == []
    assert all(iv["lower"] == {} for iv in out["uncertainty"]["intervals"])


def test_fractional_level_key():
    out = run_forecast(block(range(10), interval_levels=[99.5]), 10)
    assert "99.5" in out["uncertainty"]["intervals"][0]["lower"]


# ---------------------------------------------------------------- result shape, methods


def test_result_shape_and_meta():
    # a seasonal period without a frequency: every candidate is fitted and the median combines them all
    out = run_forecast(block(seasonal_series(72), horizon=6, seasonal_period=12), 20)
    assert out["status"] == "complete" and out["model"] == "forecast"
    meta = out["meta"]
    for name in ("naive", "seasonal_naive", "ses", "holt_damped", "ets_auto", "theta", "ces", "arima"):
        assert name in meta["candidates"], name
        assert set(meta["candidates"][name]) == {"smape", "mase", "score"}
    # the median of every model-based candidate scored, the benchmarks left out
    assert meta["combination"] == "median" and meta["method"].startswith("median(")
    model_based = {k for k in meta["candidates"] if k not in ("naive", "naive2", "seasonal_naive", "drift")}
    assert set(meta["chosen"]) == model_based
    assert meta["holdout"] == 6
    msgspec.json.encode(out)  # JSON-serialisable


def test_constant_series():
    out = run_forecast(block([5.0] * 12), 10)
    assert all(abs(p["value"] - 5.0) < 1e-6 for p in out["prediction"])


def test_trend_followed():
    out = run_forecast(block(np.arange(30) * 3.0 + 7, horizon=5), 10)
    vals = [p["value"] for p in out["prediction"]]
    assert vals == sorted(vals) and abs(vals[0] - 97.0) < 3


def test_long_series_fit_window_reported():
    y = seasonal_series(1200, 24)
    out = run_forecast(block(y, frequency="hourly", horizon=24), 60)
    assert out["checks"]["fit_window"] == {"points_used": 500, "points_total": 1200}


def test_methods_mean_and_sd_shapes():
    y = seasonal_series(50, 1)
    for fn in (
        fm.naive,
        fm.drift,
        fm.ses,
        fm.holt_damped,
        fm.ets_auto,
        fm.theta,
        fm.ces,
        fm.arima,
        fm.theta_optimised,
        fm.theta_dynamic,
    ):
        mean, sd = fn(y, 7)
        assert mean.shape == (7,) and sd.shape == (7,) and np.all(np.isfinite(mean)) and np.all(sd >= 0)
    mean, sd = fm.seasonal_naive(y, 7, 5)
    assert np.allclose(mean[:5], y[-5:]) and mean[5] == y[-5]


def test_ets_fits_shared_within_a_forecast(monkeypatch):
    # ses, theta and ets_auto fit the same (A,N,N) model on the same series: with one Fits
    # object it is optimised once and every candidate gets the same numbers as alone
    calls = []
    inner = fm.fit_ets
    monkeypatch.setattr(fm, "fit_ets", lambda *a: calls.append(a[1:]) or inner(*a))
    y = seasonal_series(60, 1, seed=5)
    fits = fm.Fits()
    shared = fm.ses(y, 4, fits)
    fm.theta(y, 4, fits)
    fm.ets_auto(y, 4, fits)
    fm.holt_damped(y.copy(), 4, fits)
    assert sorted(calls) == [(False, False), (True, False), (True, True)]
    alone = fm.ses(y, 4)
    assert np.array_equal(shared[0], alone[0]) and np.array_equal(shared[1], alone[1])
    fm.ses(y + 1.0, 4, fits)  # another series is fitted anew
    assert len(calls) == 5
    assert len(fm.Fits()._fits) == 0  # a new forecast starts empty


def test_ets_gradient_takes_scipys_finite_difference_steps():
    # fit_ets hands L-BFGS-B its own forward differences (one call per point instead of scipy's machinery): they
    # must be scipy's, to the bit, inside the box and at its edges, so that the search ends where scipy's own
    # finite differences end it, point for point
    from scipy.optimize import minimize

    rng = np.random.default_rng(13)
    bounds = [(1e-4, 0.9999), (1e-4, 0.9999), (0.8, 0.98), (None, None), (None, None)]
    for trial in range(6):
        y = 30 + np.cumsum(rng.normal(0.3, 1.0, int(rng.integers(8, 60))))

        def f(p, y=y):
            return float(np.sum((y - fm._one_step(p, y, True, True)) ** 2)) / float(np.var(y))

        # starts inside the box and on its edges (a step past an edge is turned back or shortened)
        start = [[0.3, 0.05, 0.95, 30.0, 0.3], [0.9999, 1e-4, 0.98, float(y[0]), 0.0], [0.5, 0.01, 0.8, 25.0, -1.0]]
        x0 = start[trial % 3]
        theirs = minimize(f, x0, method="L-BFGS-B", bounds=bounds, options={"maxiter": 200})
        ours = minimize(
            fm._with_forward_gradient(f, bounds),
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 200},
        )
        assert np.array_equal(ours.x, theirs.x) and ours.fun == theirs.fun and ours.nit == theirs.nit
        assert ours.nit > 1  # a real search, not a start that stopped at once


def test_ces_follows_a_trend_and_a_level():
    rng = np.random.default_rng(7)
    k = np.arange(80)
    trend = 50 + 2.0 * k + rng.normal(0, 1, 80)
    mean, sd = fm.ces(trend, 8)
    # CES extrapolates a trend through its information potential (slightly steeper than linear)
    assert mean[0] > trend[-1] - 2 and 1.5 < (mean[-1] - mean[0]) / 7 < 4 and np.all(np.diff(sd) >= -1e-9)
    flat = 20 + rng.normal(0, 1, 80)
    mean, _ = fm.ces(flat, 8)
    assert np.all(np.abs(mean - 20) < 1.5)


def test_ces_filter_matches_its_recursion():
    rng = np.random.default_rng(2)
    y = 100 + np.cumsum(rng.normal(0.3, 2, 40))
    a0, a1, l0, c0 = 1.2, 0.9, 100.0, 98.0
    f, g = fm._ces_matrices(a0, a1)
    x, loop = np.array([l0, c0]), []
    for v in y:
        loop.append(x[0])
        x = f @ x + g * (v - x[0])
    assert np.allclose(fm._ces_one_step([a0, a1, l0, c0], y), loop)
    assert fm._ces_one_step([3.0, 0.0, l0, c0], y) is None  # unstable constants are refused


def test_median_combination_is_pointwise():
    from tollway_predict import forecast_backtest as fb

    fits = {k: (np.array([v, 10 * v]), np.array([1.0, 2.0]) * v) for k, v in (("a", 1.0), ("b", 2.0), ("c", 9.0))}
    w = {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}
    mean, sd = fb.combine(fits, w, "median")
    assert np.allclose(mean, [2.0, 20.0]) and np.allclose(sd, [4.0, 8.0])
    mean, _ = fb.combine(fits, w)
    assert np.allclose(mean, [4.0, 40.0])


def test_trimmed_mean_sets_the_extremes_aside():
    # five members, one far off at each step: the mean of the middle three, which the far one cannot move
    fits = {k: (np.array([v, -v]), np.full(2, v)) for k, v in (("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0))}
    fits["e"] = (np.array([1e6, -1e6]), np.full(2, 5.0))
    w = dict.fromkeys(fits, 0.2)
    mean, sd = fb.combine(fits, w, "trimmed")
    assert np.allclose(mean, [3.0, -3.0]) and np.allclose(sd, 3.0)
    # four: the mean of the middle two (their median); three or fewer: the plain mean
    mean, _ = fb.combine(fits, {k: 0.25 for k in "abcd"}, "trimmed")
    assert np.allclose(mean, [2.5, -2.5])
    mean, _ = fb.combine(fits, dict.fromkeys("abe", 1 / 3), "trimmed")
    assert np.allclose(mean, [(3.0 + 1e6) / 3, -(3.0 + 1e6) / 3])


def test_monthly_and_quarterly_seasonal_series_add_the_damped_holt_winters_member():
    from tollway_predict import forecast_ets as fe

    y = seasonal_series(96, seed=7)
    meta = run_forecast(block(y, horizon=12, frequency="monthly"), 30)["meta"]
    assert meta["seasonality"] != "none" and "holt_winters" in meta["candidates"]
    assert meta["combination"] == "median"
    assert set(meta["chosen"]) == {"mapa", "sarima", "ets_seasonal", "holt_winters"}
    # the member itself: the damped additive form, its forecast carrying the season on
    mean, sd = fe.forecast(y, 12, 12, fe.HOLT_WINTERS)
    k = np.arange(96, 108)
    truth = 100 + 0.5 * k + 20 * np.sin(2 * np.pi * k / 12)
    assert np.max(np.abs(mean - truth)) < 6.0 and np.all(sd > 0)
    q = seasonal_series(48, m=4, seed=8)
    meta = run_forecast(block(q, horizon=8, frequency="quarterly"), 30)["meta"]
    assert meta["combination"] == "trimmed" and {"holt_winters", "naive2", "theta"} <= set(meta["chosen"])
    # a series the seasonality test finds not seasonal: neither seasonal ETS member is fitted
    flat = 100 + np.random.default_rng(9).normal(0, 1, 60)
    meta = run_forecast(block(flat, horizon=12, frequency="monthly"), 30)["meta"]
    assert meta["seasonality"] == "none" and "holt_winters" not in meta["candidates"]
    assert "ets_seasonal" not in meta["candidates"]


def test_median_of_the_model_based_candidates():
    from tollway_predict import forecast_backtest as fb

    # the median combines every model-based candidate scored, never the benchmarks, and one
    # far-off member cannot move it; with fewer than three the best are weighted instead
    scores = {
        k: {"smape": v, "mase": v, "score": v}
        for k, v in (("naive", 0.5), ("naive2", 1.0), ("ses", 0.9), ("theta", 0.8), ("ces", 0.95), ("arima", 3.0))
    }
    order = ["naive", "naive2", "ses", "theta", "ces", "arima"]
    how, w = fb.combination(scores, order)
    assert how == "median" and set(w) == {"ses", "theta", "ces", "arima"}
    fits = {k: (np.full(3, 100.0 + i), np.ones(3)) for i, k in enumerate(w)}
    fits["arima"] = (np.full(3, 1e6), np.ones(3))
    mean, _ = fb.combine(fits, w, how)
    assert np.all(mean <= 103.0)
    how, w = fb.combination({k: scores[k] for k in ("naive", "naive2", "ses", "theta")}, order)
    assert how == "weighted" and set(w) == {"ses", "theta"} and w["theta"] > w["ses"]


def test_arima_random_walk_with_drift():
    rng = np.random.default_rng(3)
    y = np.cumsum(rng.normal(2.0, 1.0, 300))
    mean, sd = fm.arima(y, 10)
    assert abs((mean[-1] - y[-1]) / 10 - 2.0) < 0.5
    assert sd[-1] > sd[0]


def test_tiny_time_limit_returns_a_forecast():
    out = run_forecast(block(seasonal_series(400, 12), frequency="monthly", horizon=12), 1e-9)
    assert out["status"] == "timeout"
    assert len(out["prediction"]) == 12 and out["meta"]["not_scored"]


# ---------------------------------------------------------------- determinism and purity


def test_deterministic_and_picklable():
    b = block(seasonal_series(80), t=monthly_dates(80), horizon=12, floor=0.0)
    b2 = pickle.loads(pickle.dumps(b))
    a, c = run_forecast(b, 20), run_forecast(b2, 20)
    a["meta"].pop("seconds"), c["meta"].pop("seconds")
    assert a == c
    assert pickle.loads(pickle.dumps(a)) == a


# ---------------------------------------------------------------- backtest, seasonal ETS, calibrated intervals


def test_backtest_origins():
    from tollway_predict import forecast_backtest as fb

    assert fb.origins(100, 12, 12) == [88, 82, 76]  # three origins, half a horizon apart, each a full horizon
    assert fb.origins(40, 12, 12) == [28]  # the others would keep fewer than two seasons
    assert fb.origins(10, 8, 1) == [7]  # no room: a shorter tail of n // 3
    out = run_forecast(block(seasonal_series(120), t=monthly_dates(120), horizon=12), 20)
    assert out["meta"]["origins"] == [108, 102, 96] and out["meta"]["holdout"] == 12
    assert out["meta"]["calibration_origins"] == 3


def test_seasonal_monthly_picks_a_seasonal_candidate_and_intervals_grow_with_level():
    rng = np.random.default_rng(4)
    k = np.arange(96)
    y = (200 + 1.5 * k) * (1 + 0.25 * np.sin(2 * np.pi * k / 12)) + rng.normal(0, 4, 96)
    out = run_forecast(block(y, t=monthly_dates(96), horizon=12, interval_levels=[50, 80, 95]), 20)
    meta = out["meta"]
    assert "ets_seasonal" in meta["candidates"] and meta["seasonality"] != "none"
    assert "ets_seasonal" in meta["chosen"]
    assert abs(sum(meta["weights"].values()) - 1) < 1e-5 and set(meta["weights"]) == set(meta["chosen"])  # rounded
    scale = meta["interval_scale"]
    assert scale["50"] < scale["80"] < scale["95"]
    for iv in out["uncertainty"]["intervals"]:
        w = {lv: iv["upper"][lv] - iv["lower"][lv] for lv in ("50", "80", "95")}
        assert 0 < w["50"] < w["80"] < w["95"]


def test_multiplier_conformal():
    from tollway_predict import forecast_backtest as fb

    z = np.abs(np.random.default_rng(0).normal(size=2000))
    assert abs(fb.multiplier(z, 95) - 1.96) < 0.1  # normal ratios: the normal quantile
    assert fb.multiplier(np.zeros(0), 80) == pytest.approx(1.2816, abs=1e-3)
    assert fb.multiplier(z * 3, 80) > 3 * 1.2
    # below 90 %: halfway between the conformal quantile and the larger of it and the robust normal value
    uniform = np.linspace(0.01, 1.0, 99)  # the robust normal value (0.95) above the 80 % point
    q80 = float(uniform[int(np.ceil(100 * 0.8)) - 1])
    tail = max(q80, float(np.median(uniform)) / 0.6745 * 1.2816)
    assert tail > q80 and fb.multiplier(uniform, 80) == pytest.approx(0.5 * (q80 + tail), rel=1e-3)


def test_interval_coverage_on_simulated_series_near_the_level():
    # local level plus noise, known Gaussian noise: over many paths the calibrated
    # intervals cover close to their levels on the held-out steps
    rng = np.random.default_rng(11)
    cover = {"80": [], "95": []}
    h = 6
    for _ in range(30):
        level = 100 + np.cumsum(rng.normal(0, 1.0, 66))
        y = level + rng.normal(0, 2.0, 66)
        out = run_forecast(block(y[:60], horizon=h), 20)
        for lv in cover:
            lo = np.array([iv["lower"][lv] for iv in out["uncertainty"]["intervals"]])
            hi = np.array([iv["upper"][lv] for iv in out["uncertainty"]["intervals"]])
            cover[lv].append(np.mean((y[60:] >= lo) & (y[60:] <= hi)))
    c80, c95 = float(np.mean(cover["80"])), float(np.mean(cover["95"]))
    assert abs(c80 - 0.80) < 0.10 and abs(c95 - 0.95) < 0.06


def test_seasonal_ets_forms():
    from tollway_predict import forecast_ets as fe

    y = seasonal_series(72) - 100  # crosses zero: additive forms only
    form, params = fe.choose(y, 12)
    assert form[0] == "add" and form[3] == "add" and np.all(np.isfinite(params))
    mean, sd = fe.forecast(y, 18, 12, form, params)
    assert mean.shape == sd.shape == (18,) and np.all(sd > 0) and sd[-1] >= sd[0]
    assert not fe.usable(y[:27], 12) and not fe.usable(y, 24)
    k = np.arange(72)
    positive = (200 + 2 * k) * (1 + 0.3 * np.sin(2 * np.pi * k / 12))
    form, _ = fe.choose(positive, 12)
    assert form[0] == "mul"  # a positive series ranks the multiplicative-error forms


def test_seasonal_ets_projection_matches_statsmodels():
    from tollway_predict import forecast_ets as fe

    k = np.arange(84)
    y = (100 + 0.8 * k) * (1 + 0.2 * np.sin(2 * np.pi * k / 12)) + np.random.default_rng(3).normal(0, 2, 84)
    for form in (("add", "add", True, "add"), ("mul", None, False, "mul"), ("mul", "add", True, "mul")):
        f = fe._Fit(y, 12, form)
        res = fe._model(f.y, 12, form).smooth(f.params)
        assert np.allclose(f.project(18), res.forecast(18), rtol=1e-9)
        assert abs(f.aicc - res.aicc) < 1e-6


def test_hourly_seasonal_naive_replaces_the_median_when_it_backtests_better():
    # a daily profile that changed shape ten days ago: indices averaged over the window blur the
    # new shape, the last cycle repeated keeps it, and the backtest sees it
    k = np.arange(24 * 30)
    old = 100 + 30 * np.sin(2 * np.pi * k / 24)
    new = 100 + 30 * np.sin(2 * np.pi * (k + 8) / 24)
    y = np.where(k < 24 * 20, old, new) + np.random.default_rng(3).normal(0, 1.0, len(k))
    out = run_forecast(block(y, horizon=48, frequency="hourly"), 20)
    meta = out["meta"]
    assert meta["method"] == "seasonal_naive" and meta["weights"] == {"seasonal_naive": 1.0}
    mean = np.array([p["value"] for p in out["prediction"]])
    assert np.allclose(mean[:24], y[-24:]) and np.allclose(mean[24:], y[-24:])
    # a monthly series keeps its frequency's combination (the seasonal ETS models its season)
    monthly = run_forecast(block(seasonal_series(72), horizon=12, frequency="monthly"), 20)["meta"]
    assert monthly["combination"] == "median" and "ets_seasonal" in monthly["chosen"]


def test_hourly_arima_may_replace_the_median():
    s = lambda v: {"smape": v, "mase": v, "score": v}  # noqa: E731
    scores = {"seasonal_naive": s(0.8), "sarima": s(0.75), "arima": s(0.7), "ses": s(0.9)}
    assert fb.long_cycle_pick(scores, 0.78) == "arima"
    assert fb.long_cycle_pick(scores, 0.69) is None
    assert "arima" not in fb.LONG_CYCLE  # so it stays a member of a long cycle's median


@pytest.mark.parametrize(
    ("frequency", "m", "how", "members"),
    [
        ("monthly", 12, "median", {"mapa", "sarima", "ets_seasonal", "holt_winters"}),
        ("quarterly", 4, "trimmed", {"theta", "ces", "naive2", "ets_seasonal", "holt_winters"}),
        ("weekly", 52, "weighted", {"ses", "theta", "sarima"}),
        (
            "yearly",
            1,
            "median",
            {"ses", "holt_damped", "theta", "ets_auto", "arima", "theta_optimised", "theta_dynamic"},
        ),
        (None, 1, "median", {"holt_damped", "ces", "arima"}),
    ],
)
def test_frequency_level_members(frequency, m, how, members):
    every = {k: {"score": 1.0} for k in (*fm.CANDIDATES, "ets_seasonal", "holt_winters", "sarima", "mapa")}
    got_how, w = fc.combination(frequency, m, every)
    assert got_how == how and set(w) == members and abs(sum(w.values()) - 1) < 1e-12
    assert len(set(w.values())) == 1  # equal weights
    # members that were not scored are left out; none scored: the caller's own rule
    some = {k: v for k, v in every.items() if k != sorted(members)[0]}
    assert set(fc.combination(frequency, m, some)[1]) == members - {sorted(members)[0]}
    assert fc.combination(frequency, m, {"naive": {"score": 1.0}}) is None


def test_frequencies_without_a_row_combine_every_candidate():
    every = {k: {"score": 1.0} for k in fm.CANDIDATES}
    for frequency, m in (("hourly", 24), ("daily", 7), (None, 12)):
        assert fc.combination(frequency, m, every) is None and fc.members(frequency, m) is None


def test_listed_only_members_stay_out_of_the_median_of_every_candidate():
    out = run_forecast(block(seasonal_series(72), horizon=6, seasonal_period=12), 20)
    assert not set(fc.LISTED_ONLY) & set(out["meta"]["candidates"])


def test_a_yearly_forecast_combines_the_theta_models():
    y = 100 + np.cumsum(np.random.default_rng(4).normal(2, 3, 30))
    meta = run_forecast(block(y, horizon=6, frequency="yearly"), 30)["meta"]
    assert meta["combination"] == "median" and {"theta_optimised", "theta_dynamic"} <= set(meta["chosen"])
    assert "ces" not in meta["candidates"]


def test_a_weekly_forecast_fits_only_its_members():
    y = seasonal_series(300, m=52, seed=5)
    meta = run_forecast(block(y, horizon=13, frequency="weekly"), 30)["meta"]
    assert set(meta["candidates"]) <= {"naive", "naive2", "seasonal_naive", "drift", "ses", "theta", "sarima"}
    assert meta["chosen"] == ["ses", "theta", "sarima"] and meta["combination"] == "weighted"
