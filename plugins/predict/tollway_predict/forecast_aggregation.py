"""Temporal aggregation (MAPA-style, Kourentzes et al. 2014): a damped-trend ETS at several bucket sizes, their median."""

from __future__ import annotations

import numpy as np

from . import forecast_models as fm

# an aggregation level is fitted only when the series fills at least this many of its buckets (a monthly series
# of 48 points: levels 1 to 6, not 12); level 1 is always fitted
MIN_BUCKETS = 6


def levels(m: int) -> tuple[int, ...]:
    """The bucket sizes: every divisor of the seasonal period (monthly 1, 2, 3, 4, 6, 12; quarterly 1, 2, 4), so
    each level's buckets cover whole parts of a cycle; 1 alone without a season."""
    return tuple(k for k in range(1, max(m, 1) + 1) if m % k == 0)


def buckets(z: np.ndarray, k: int) -> np.ndarray:
    """Means of non-overlapping buckets of k points, the last bucket ending at the last point (the oldest
    remainder of fewer than k points dropped)."""
    z = np.asarray(z, float)
    nb = len(z) // k
    return z[len(z) - nb * k :].reshape(nb, k).mean(axis=1)


def forecast(z: np.ndarray, h: int, m: int, fits: fm.Fits | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Forecast of a seasonally adjusted series z: at each level k the damped-trend ETS (A,Ad,N) fitted on the
    bucket means, its forecast of the next buckets held for their k steps; the pointwise median over the levels.
    The sd is level 1's (the model at the series' own step; the intervals are recalibrated on the backtest)."""
    z = np.asarray(z, float)
    paths, sd = [], None
    for k in levels(m):
        if k > 1 and len(z) // k < MIN_BUCKETS:
            continue
        x = z if k == 1 else buckets(z, k)
        mean, s = fm.holt_damped(x, -(-h // k), fits)
        paths.append(np.repeat(np.asarray(mean, float), k)[:h])
        if k == 1:
            sd = np.asarray(s, float)
    return np.median(np.vstack(paths), axis=0), sd
