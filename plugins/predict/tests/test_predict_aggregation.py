"""Temporal-aggregation member (forecast_aggregation): levels, buckets, the median over levels, its place in the forecast."""

from __future__ import annotations

import math

import numpy as np

from tollway_predict import forecast as fcast
from tollway_predict import forecast_aggregation as fa
from tollway_predict import forecast_models as fm
from tollway_predict.forecast import ForecastBlock, Point, run_forecast


def seasonal_series(n, m=12, seed=0):
    rng = np.random.default_rng(seed)
    k = np.arange(n)
    return 100 + 0.5 * k + 20 * np.sin(2 * np.pi * k / m) + rng.normal(0, 1, n)


def test_levels_are_the_divisors_of_the_period():
    assert fa.levels(12) == (1, 2, 3, 4, 6, 12)
    assert fa.levels(4) == (1, 2, 4)
    assert fa.levels(1) == (1,)


def test_buckets_end_at_the_last_point_and_drop_the_oldest_remainder():
    # 10 points in buckets of 4: points 2..5 and 6..9; 0 and 1 dropped
    assert np.allclose(fa.buckets(np.arange(10.0), 4), [3.5, 7.5])
    assert np.allclose(fa.buckets(np.arange(10.0), 1), np.arange(10.0))


def test_forecast_is_the_median_of_the_level_paths_held_for_their_buckets():
    rng = np.random.default_rng(3)
    z = 50 + 0.3 * np.arange(48) + rng.normal(0, 2, 48)
    mean, sd = fa.forecast(z, 18, 12)
    # 48 points: 48 // 12 = 4 buckets of a year, fewer than MIN_BUCKETS, so levels 1 to 6 only
    paths = []
    for k in (1, 2, 3, 4, 6):
        x = z[len(z) - (len(z) // k) * k :].reshape(-1, k).mean(axis=1)
        f = fm.fit_ets(x, True, True)
        paths.append(np.repeat(fm.project_ets(f, math.ceil(18 / k))[0], k)[:18])
    assert np.allclose(mean, np.median(np.vstack(paths), axis=0))
    assert np.allclose(sd, fm.holt_damped(z, 18)[1])
    # with 72 points the yearly level joins (six buckets): the forecast changes
    z72 = 50 + 0.3 * np.arange(72) + rng.normal(0, 2, 72)
    without = np.median(
        np.vstack(
            [np.repeat(fm.holt_damped(fa.buckets(z72, k), math.ceil(18 / k))[0], k)[:18] for k in (1, 2, 3, 4, 6)]
        ),
        axis=0,
    )
    assert not np.allclose(fa.forecast(z72, 18, 12)[0], without)


def test_member_carries_the_season_and_trend_of_a_monthly_series():
    y = seasonal_series(96, seed=7)
    fits, errors, _, season = fcast._fit_all(y, 12, 12, ["mapa"], math.inf)
    assert not errors and season.kind != "none"
    mean, sd = fits["mapa"]
    k = np.arange(96, 108)
    truth = 100 + 0.5 * k + 20 * np.sin(2 * np.pi * k / 12)
    assert np.max(np.abs(mean - truth)) < 8.0 and np.all(sd > 0)


def test_monthly_forecast_combines_mapa_deterministically_and_quarterly_keeps_theta():
    y = seasonal_series(96, seed=11)
    b = ForecastBlock(series=[Point(t=i, y=float(v)) for i, v in enumerate(y)], horizon=18, frequency="monthly")
    first, second = run_forecast(b, 30), run_forecast(b, 30)
    assert first["version"] == "forecast-8"
    assert "mapa" in first["meta"]["chosen"] and "theta" not in first["meta"]["candidates"]
    assert first["prediction"] == second["prediction"] and first["uncertainty"] == second["uncertainty"]
    q = seasonal_series(48, m=4, seed=8)
    bq = ForecastBlock(series=[Point(t=i, y=float(v)) for i, v in enumerate(q)], horizon=8, frequency="quarterly")
    meta = run_forecast(bq, 30)["meta"]
    assert "theta" in meta["chosen"] and "mapa" not in meta["candidates"]
