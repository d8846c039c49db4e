"""The airline seasonal ARIMA (0,1,1)(0,1,1)m fitted by conditional sum of squares, for long cycles (hourly 24)."""

from __future__ import annotations

import math

import numpy as np

CYCLES = 10  # fitted on the last 10 cycles at most (10 days of an hourly series)
LIMIT = 0.98  # |theta|, |Theta| kept inside the invertible region


def usable(y: np.ndarray, m: int) -> bool:
    """Room for the two differences and at least two cycles of residuals."""
    return m > 1 and len(y) >= 3 * m + 2


def _residuals(w: np.ndarray, theta: float, big: float, m: int) -> np.ndarray:
    """Innovations of w_t = (1 + theta B)(1 + Theta B^m) e_t, the pre-sample ones set to zero."""
    from scipy.signal import lfilter  # imported at the first fit: scipy.signal is slow to import

    den = np.zeros(m + 2)
    den[0], den[1], den[m], den[m + 1] = 1.0, theta, big, theta * big
    return lfilter([1.0], den, w)


def fit(y: np.ndarray, m: int) -> tuple[float, float, float]:
    """(theta, Theta, sigma2) minimising the conditional sum of squares of the differenced
    series (the first cycle's innovations, still settling from the zero start, left out)."""
    from scipy.optimize import minimize

    x = np.asarray(y, float)[-CYCLES * m - m - 1 :]
    w = np.diff(x)[m:] - np.diff(x)[:-m]
    skip = min(m + 1, len(w) // 3)
    scale = float(np.dot(w, w)) or 1.0  # the criterion relative to the plain sum of squares

    def css(p):
        if abs(p[0]) > LIMIT or abs(p[1]) > LIMIT:
            return 1e300
        e = _residuals(w, p[0], p[1], m)[skip:]
        v = float(np.dot(e, e)) / scale
        return v if math.isfinite(v) else 1e300

    best = minimize(css, [-0.4, -0.6], method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-9, "maxiter": 400})
    theta, big = float(best.x[0]), float(best.x[1])
    n_e = len(w) - skip
    return theta, big, float(best.fun) * scale / max(n_e - 2, 1)


def forecast(y: np.ndarray, h: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Point forecasts and error sds of the fitted airline model, h steps ahead."""
    from scipy.signal import lfilter

    if not usable(y, m):
        raise ValueError("too short for the seasonal ARIMA")
    theta, big, sigma2 = fit(y, m)
    x = np.asarray(y, float)[-CYCLES * m - m - 1 :]
    w = np.diff(x)[m:] - np.diff(x)[:-m]
    e = np.r_[np.zeros(m + 1), _residuals(w, theta, big, m)]  # e[k] pairs with w[k - m - 1]
    ext = np.r_[x, np.zeros(h)]
    ee = np.r_[e, np.zeros(h)]
    n = len(x)
    for j in range(h):
        k = len(e) + j  # index of this step's innovation slot
        wf = theta * ee[k - 1] + big * ee[k - m] + theta * big * ee[k - m - 1]
        t = n + j
        ext[t] = wf + ext[t - 1] + ext[t - m] - ext[t - m - 1]
    # psi weights of (1 + theta B)(1 + Theta B^m) / ((1 - B)(1 - B^m))
    num = np.zeros(m + 2)
    num[0], num[1], num[m], num[m + 1] = 1.0, theta, big, theta * big
    den = np.zeros(m + 2)
    den[0], den[1], den[m], den[m + 1] = 1.0, -1.0, -1.0, 1.0
    impulse = np.zeros(h)
    impulse[0] = 1.0
    psi = lfilter(num, den, impulse)
    sd = np.sqrt(sigma2 * np.cumsum(psi**2))
    return ext[n:], sd
