"""The Theta models of Fiorucci et al. (2016) — standard, optimised, dynamic standard, dynamic optimised — fitted by in-sample MSE."""

from __future__ import annotations

import numpy as np

STANDARD_THETA = 2.0  # the standard Theta method's theta: the theta line doubles the local curvature
# the optimised forms search theta in [1, MAX_THETA] (the authors' forecTheta package allows up to 1e10, and
# alpha from 0.1: within 0.001 of these on the yearly median, docs/predict.md `forecast-7`)
MAX_THETA = 100.0
ALPHA_BOUNDS = (0.01, 0.99)
ALPHA_GRID = np.linspace(*ALPHA_BOUNDS, 25)  # a coarse look before the bounded refinement (the SSE is not unimodal)
# (name, dynamic trend line, theta optimised); the forecast uses OTM and DOTM (forecast_models), the
# standard forms are their theta = 2 special cases
FORMS = (("stm", False, False), ("otm", False, True), ("dstm", True, False), ("dotm", True, True))


def trend_lines(y: np.ndarray, dynamic: bool) -> tuple[np.ndarray, np.ndarray]:
    """Intercept A and slope B of the least-squares line y ~ A + B t (t = 1, 2, ...) used at each step
    t = 1..n: the whole series' line for the static forms; for the dynamic forms, the line of the points
    before t (one point: level y_1, slope 0; none: as one point)."""
    n = len(y)
    t = np.arange(1, n + 1, dtype=float)
    s_y, s_ty = np.cumsum(y), np.cumsum(t * y)
    s_t, s_tt = t * (t + 1) / 2, t * (t + 1) * (2 * t + 1) / 6
    den = t * s_tt - s_t * s_t
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(den > 0, (t * s_ty - s_t * s_y) / np.where(den > 0, den, 1.0), 0.0)
    icpt = s_y / t - slope * (t + 1) / 2
    if not dynamic:
        return np.full(n, icpt[-1]), np.full(n, slope[-1])
    return np.r_[icpt[0], icpt[:-1]], np.r_[slope[0], slope[:-1]]


def _drift_weight(alpha: float, t: np.ndarray) -> np.ndarray:
    """(1 - (1 - alpha)^t) / alpha: how much slope the level has carried after t steps."""
    return (1 - (1 - alpha) ** t) / alpha


def _fit_given_alpha(y, alpha: float, icpt, slope, theta_free: bool):
    """For one alpha, the initial level and theta minimising the SSE of the one-step forecasts
    mu_t = l_(t-1) + (1 - 1/theta) [(1 - alpha)^(t-1) A + (1 - (1 - alpha)^t) / alpha B],
    l_t = alpha y_t + (1 - alpha) l_(t-1): mu is linear in l_0 and k = 1 - 1/theta, so both are
    solved by least squares (k held in [0, 1 - 1/MAX_THETA]). Returns (sse, l0, k)."""
    from scipy.signal import lfilter  # at the first fit, as the other models: scipy.signal is slow to import

    n = len(y)
    t = np.arange(1, n + 1, dtype=float)
    decay = (1 - alpha) ** (t - 1)
    driven = np.r_[0.0, lfilter([alpha], [1.0, alpha - 1.0], y)[:-1]]  # l_(t-1) from l_0 = 0
    curve = decay * icpt + _drift_weight(alpha, t) * slope
    rest = y - driven
    k_max = 1 - 1 / MAX_THETA
    k = 1 - 1 / STANDARD_THETA
    if theta_free:
        cols = np.column_stack([decay, curve])
        (l0, k), *_ = np.linalg.lstsq(cols, rest, rcond=None)
        k = float(min(max(k, 0.0), k_max))
    l0 = float(np.dot(decay, rest - k * curve) / np.dot(decay, decay))
    e = rest - l0 * decay - k * curve
    return float(np.dot(e, e)), l0, k


def fit(y: np.ndarray, dynamic: bool, theta_free: bool) -> dict:
    """One Theta form by in-sample MSE: alpha on a grid, refined by a bounded scalar search around the
    best grid point; the initial level and theta exactly for each alpha."""
    from scipy.optimize import minimize_scalar

    y = np.asarray(y, float)
    icpt, slope = trend_lines(y, dynamic)
    sse = lambda a: _fit_given_alpha(y, a, icpt, slope, theta_free)[0]  # noqa: E731
    grid = [sse(a) for a in ALPHA_GRID]
    i = int(np.argmin(grid))
    lo, hi = ALPHA_GRID[max(i - 1, 0)], ALPHA_GRID[min(i + 1, len(ALPHA_GRID) - 1)]
    r = minimize_scalar(sse, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    alpha = float(r.x) if r.fun < grid[i] else float(ALPHA_GRID[i])
    err, l0, k = _fit_given_alpha(y, alpha, icpt, slope, theta_free)
    level = l0
    for v in y:  # the final level
        level = alpha * v + (1 - alpha) * level
    n = len(y)
    params = 2 + (1 if theta_free else 0)  # alpha, l0, theta
    whole_icpt, whole_slope = trend_lines(y, False) if dynamic else (icpt, slope)
    return {
        "alpha": alpha,
        "theta": 1 / (1 - k),
        "level": level,
        "icpt": float(whole_icpt[-1]),
        "slope": float(whole_slope[-1]),
        "n": n,
        "mse": err / n,
        "sigma2": err / max(n - params, 1),
    }


def project(f: dict, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Point forecasts l_n + (1 - 1/theta) [(1 - alpha)^n A_n + ((h - 1) + (1 - (1 - alpha)^(n+1)) / alpha) B_n]
    (A_n, B_n: the whole series' line, which the dynamic line reaches at n) and the sd of SES errors."""
    a, n, k = f["alpha"], f["n"], 1 - 1 / f["theta"]
    j = np.arange(1, h + 1, dtype=float)
    mean = f["level"] + k * ((1 - a) ** n * f["icpt"] + (j - 1 + _drift_weight(a, n + 1)) * f["slope"])
    sd = np.sqrt(f["sigma2"] * (1 + (j - 1) * a * a))
    return mean, sd
