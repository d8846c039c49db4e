"""The airline seasonal ARIMA member, the long-cycle choice among median, seasonal naive and
airline model. No timing assertions."""

from __future__ import annotations

import numpy as np

from tollway_predict import forecast_backtest as fb
from tollway_predict import forecast_sarima as fs
from tollway_predict.forecast import ForecastBlock, Point, run_forecast

M = 24


def airline(n: int, theta: float, big: float, seed: int, m: int = M):
    """A simulated (0,1,1)(0,1,1)m process around a daily profile, its innovations, and the
    true conditional mean of the next h steps (future innovations zero) for h = 2 m."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, 1.0, n)
    w = e.copy()
    w[1:] += theta * e[:-1]
    w[m:] += big * e[:-m]
    w[m + 1 :] += theta * big * e[: -m - 1]
    y = np.zeros(n + 2 * m)
    for t in range(n):
        y[t] = w[t] + (y[t - 1] if t >= 1 else 0) + (y[t - m] if t >= m else 0) - (y[t - m - 1] if t > m else 0)
    ee = np.r_[e, np.zeros(2 * m)]
    for t in range(n, n + 2 * m):
        wf = theta * ee[t - 1] + big * ee[t - m] + theta * big * ee[t - m - 1]
        y[t] = wf + y[t - 1] + y[t - m] - y[t - m - 1]
    profile = 500 + 40 * np.sin(2 * np.pi * np.arange(n + 2 * m) / m)
    y = y + profile
    return y[:n], y[n:]


def test_airline_recovers_a_known_process_and_its_forecast():
    # 12 cycles, 10 of them fitted: over seeds 0..9 the estimates were within 0.19 of the truth
    # and the forecasts within 0.46 sd of the true-parameter ones
    for seed, (theta, big) in enumerate([(-0.4, -0.5), (0.3, -0.4), (-0.6, -0.3)]):
        y, truth = airline(M * 12, theta, big, seed)
        got_theta, got_big, sigma2 = fs.fit(y, M)
        assert abs(got_theta - theta) < 0.2 and abs(got_big - big) < 0.2, (seed, got_theta, got_big)
        assert 0.8 < sigma2 < 1.2
        mean, sd = fs.forecast(y, 2 * M, M)
        # the forecast the true parameters give, within a fraction of the forecast's own error sd
        assert np.max(np.abs(mean - truth) / sd) < 0.5, (seed, np.max(np.abs(mean - truth) / sd))
        assert abs(sd[0] - np.sqrt(sigma2)) < 1e-9 and np.all(np.diff(sd) >= 0)
        assert sd[-1] > sd[M - 1] > sd[0]


def test_airline_of_a_pure_repeating_cycle_repeats_it():
    y = np.tile(np.arange(M, dtype=float) ** 1.5, 8) + 10
    mean, _ = fs.forecast(y, 30, M)
    assert np.allclose(mean, y[-M:][np.arange(30) % M], atol=1e-6)


def test_airline_needs_three_cycles():
    assert not fs.usable(np.ones(3 * M + 1), M) and fs.usable(np.ones(3 * M + 2), M)


def test_long_cycle_pick_takes_the_best_only_when_it_beats_the_median():
    s = lambda v: {"smape": v, "mase": v, "score": v}  # noqa: E731
    scores = {"naive": s(1.2), "seasonal_naive": s(0.8), "sarima": s(0.7), "ses": s(0.9)}
    assert fb.long_cycle_pick(scores, 0.75) == "sarima"
    assert fb.long_cycle_pick(scores, 0.6) is None
    assert fb.long_cycle_pick({**scores, "sarima": s(0.85)}, 0.82) == "seasonal_naive"
    assert fb.long_cycle_pick({"seasonal_naive": s(0.8)}, 0.9) == "seasonal_naive"
    # the seasonal naive is never a member of the median; the airline model is when it is in the order
    more = {**scores, "theta": s(1.0), "arima": s(1.1)}
    how, w = fb.combination(more, list(more))
    assert how == "median" and set(w) == {"sarima", "ses", "theta", "arima"}


def _block(y, **kw):
    return ForecastBlock(series=[Point(t=i, y=float(v)) for i, v in enumerate(y)], **kw)


def test_hourly_airline_process_is_forecast_by_the_airline_model():
    y, truth = airline(M * 21, -0.4, -0.7, 11)
    out = run_forecast(_block(y, horizon=2 * M, frequency="hourly"), 30)
    meta = out["meta"]
    assert "sarima" in meta["candidates"] and "seasonal_naive" in meta["candidates"]
    assert meta["method"] == "sarima" and meta["weights"] == {"sarima": 1.0}
    mean = np.array([p["value"] for p in out["prediction"]])
    assert np.max(np.abs(mean - truth)) < 1.0


def test_monthly_series_take_the_airline_model_into_their_combination():
    k = np.arange(96)
    y = 200 + 0.8 * k + 25 * np.sin(2 * np.pi * k / 12) + np.random.default_rng(2).normal(0, 2, len(k))
    meta = run_forecast(_block(y, horizon=12, frequency="monthly"), 30)["meta"]
    # monthly: the median of its frequency's members (forecast_choice)
    assert meta["combination"] == "median" and "sarima" in meta["chosen"] and "seasonal_naive" not in meta["chosen"]
    # a long cycle keeps it out of the median: it competes with the median instead
    hourly = run_forecast(_block(np.r_[y, y, y, y][: 24 * 14], horizon=24, frequency="hourly"), 30)["meta"]
    assert "sarima" in hourly["candidates"]
    assert hourly["chosen"] == ["sarima"] or "sarima" not in hourly["chosen"]


def test_airline_is_not_tried_when_the_horizon_is_shorter_than_the_cycle():
    y, _ = airline(M * 21, -0.4, -0.7, 11)
    meta = run_forecast(_block(y, horizon=M - 1, frequency="hourly"), 30)["meta"]
    assert "sarima" not in meta["candidates"] and "seasonal_naive" in meta["candidates"]
