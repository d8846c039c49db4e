"""The Theta models of forecast_theta: their trend lines, fits and forecasts on series with a known answer."""

from __future__ import annotations

import numpy as np
import pytest

from tollway_predict import forecast_theta as ft


def drifting_walk(drift: float, n: int = 60, seed: int = 3) -> np.ndarray:
    """A random walk plus a straight line of this slope: the more drift, the larger the optimised theta."""
    rng = np.random.default_rng(seed)
    return 100 + np.cumsum(rng.normal(0, 1, n)) + drift * np.arange(n)


def test_trend_lines_are_least_squares_lines():
    y = np.array([3.0, 5.0, 4.0, 8.0, 9.0, 12.0, 11.0])
    t = np.arange(1, 8)
    icpt, slope = ft.trend_lines(y, dynamic=False)
    b, a = np.polyfit(t, y, 1)
    assert np.allclose(icpt, a) and np.allclose(slope, b)
    d_icpt, d_slope = ft.trend_lines(y, dynamic=True)
    # at step t the dynamic line is the line of the points before t
    for step in range(3, 8):
        b, a = np.polyfit(t[: step - 1], y[: step - 1], 1)
        assert abs(d_slope[step - 1] - b) < 1e-9 and abs(d_icpt[step - 1] - a) < 1e-9
    assert d_slope[0] == d_slope[1] == 0 and d_icpt[0] == d_icpt[1] == y[0]


def test_a_straight_line():
    # the optimised forms follow a line (theta very large: the drift is the whole slope);
    # the standard ones, theta = 2, carry half the slope forward, as the Theta method does
    y = 7.0 + 3.0 * np.arange(40)
    for _, dynamic, free in ft.FORMS:
        step = 3.0 * (1 - 1 / (ft.MAX_THETA if free else 2.0))
        mean, sd = ft.project(ft.fit(y, dynamic, free), 5)
        assert np.allclose(np.diff(mean), step, rtol=0.01) and abs(mean[0] - (y[-1] + step)) < 0.1, (dynamic, free)
        assert np.all(sd >= 0)


def test_optimised_theta_grows_with_the_drift():
    thetas = [ft.fit(drifting_walk(c), dynamic=False, theta_free=True)["theta"] for c in (0.0, 0.2, 0.5, 1.0)]
    assert thetas == sorted(thetas) and thetas[0] < 1.5 and 5 < thetas[-1] < ft.MAX_THETA


def test_optimised_theta_matches_the_standard_one_when_two_is_best():
    # the drift at which the optimised theta is 2, by bisection: there the two forms forecast alike
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if ft.fit(drifting_walk(mid), dynamic=False, theta_free=True)["theta"] < 2.0:
            lo = mid
        else:
            hi = mid
    y = drifting_walk(0.5 * (lo + hi))
    optimised = ft.fit(y, dynamic=False, theta_free=True)
    standard = ft.fit(y, dynamic=False, theta_free=False)
    assert abs(optimised["theta"] - 2.0) < 1e-3 and standard["theta"] == 2.0
    assert abs(optimised["alpha"] - standard["alpha"]) < 1e-3
    got, want = ft.project(optimised, 6)[0], ft.project(standard, 6)[0]
    assert np.max(np.abs(got - want)) < 1e-3 * np.mean(np.abs(want))
    assert optimised["mse"] <= standard["mse"] + 1e-9  # it nests the standard form


@pytest.mark.parametrize("values", [[5.0], [5.0, 6.0], [2.0, 4.0, 3.0], [9.0] * 10])
def test_short_and_constant_series(values):
    for _, dynamic, free in ft.FORMS:
        mean, sd = ft.project(ft.fit(np.array(values), dynamic, free), 4)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(sd)) and np.all(sd >= 0)
        if len(set(values)) == 1:
            assert np.allclose(mean, values[0]) and np.allclose(sd, 0.0)
