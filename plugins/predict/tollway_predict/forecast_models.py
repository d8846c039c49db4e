"""Forecasting methods. Each candidate maps a training array and a horizon to
``(mean, sd)`` arrays of length h (sd: standard deviation of the h-step error under
the method's own model, used for normal prediction intervals).

Seasonality is handled once, outside the methods that cannot model it: the series is
tested for seasonality at lag m (the M4 90 % autocorrelation test), and if seasonal
it is divided by (or, with non-positive values, has subtracted) classical
decomposition indices; SES, Holt, damped, ETS, Theta, drift and ARIMA run on the
adjusted series and are re-seasonalised. Naive and seasonal naive run on the raw
series. The exponential-smoothing family and Theta are implemented here directly
(closed-form variance, scipy optimiser), ARIMA uses statsmodels (Hannan-Rissanen
estimation of the ARMA part of a differenced series, order by AICc).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import forecast_theta as ft

# ---------------------------------------------------------------- seasonality


def seasonality_test(y: np.ndarray, m: int) -> bool:
    """M4 benchmark test: autocorrelation at lag m beyond the 90 % limit."""
    n = len(y)
    if m <= 1 or n < 2 * m:
        return False
    x = y - y.mean()
    denom = float(np.dot(x, x))
    if denom <= 0:
        return False
    acf = np.array([np.dot(x[k:], x[: n - k]) / denom for k in range(1, m + 1)])
    limit = 1.645 * math.sqrt((1 + 2 * float(np.sum(acf[: m - 1] ** 2))) / n)
    return abs(acf[m - 1]) > limit


def seasonal_indices(y: np.ndarray, m: int, multiplicative: bool) -> np.ndarray:
    """Classical decomposition: indices by position (index 0 = position of y[0])."""
    if m % 2 == 0:
        w = np.r_[0.5, np.ones(m - 1), 0.5] / m
    else:
        w = np.ones(m) / m
    trend = np.convolve(y, w, mode="valid")
    off = (len(w) - 1) // 2
    core = y[off : off + len(trend)]
    ratio = core / trend if multiplicative else core - trend
    where = (np.arange(len(ratio)) + off) % m
    idx = np.zeros(m)
    for j in range(m):
        vals = ratio[where == j]
        idx[j] = vals.mean() if len(vals) else (1.0 if multiplicative else 0.0)
    if multiplicative:
        idx = idx / idx.mean()
    else:
        idx = idx - idx.mean()
    return idx


class Season:
    """Seasonal adjustment of one series (identity when not seasonal)."""

    def __init__(self, y: np.ndarray, m: int):
        self.m = m
        self.kind = "none"
        self.idx = None
        if m > 1 and seasonality_test(y, m):
            mult = bool(np.all(y > 0))
            idx = seasonal_indices(y, m, mult)
            if np.all(np.isfinite(idx)) and (not mult or np.all(idx > 0)):
                self.kind = "multiplicative" if mult else "additive"
                self.idx = idx
        self.n = len(y)

    def _pattern(self, start: int, length: int) -> np.ndarray:
        return self.idx[(np.arange(start, start + length)) % self.m]

    def adjust(self, y: np.ndarray) -> np.ndarray:
        if self.idx is None:
            return y
        s = self._pattern(0, len(y))
        return y / s if self.kind == "multiplicative" else y - s

    def restore(self, mean: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.idx is None:
            return mean, sd
        s = self._pattern(self.n, len(mean))
        if self.kind == "multiplicative":
            return mean * s, sd * s
        return mean + s, sd


# ---------------------------------------------------------------- simple methods


def naive(y: np.ndarray, h: int, fits: Fits | None = None):
    d = np.diff(y)
    s = float(np.sqrt(np.mean(d**2))) if len(d) else 0.0
    return np.full(h, y[-1]), s * np.sqrt(np.arange(1, h + 1))


def seasonal_naive(y: np.ndarray, h: int, m: int):
    d = y[m:] - y[:-m]
    s = float(np.sqrt(np.mean(d**2))) if len(d) else 0.0
    k = np.arange(h)
    mean = y[len(y) - m + (k % m)]
    return mean.astype(float), s * np.sqrt(k // m + 1.0)


def drift(y: np.ndarray, h: int, fits: Fits | None = None):
    n = len(y)
    slope = (y[-1] - y[0]) / (n - 1)
    d = np.diff(y) - slope
    s = float(np.sqrt(np.sum(d**2) / max(n - 2, 1)))
    k = np.arange(1, h + 1)
    return y[-1] + slope * k, s * np.sqrt(k * (1 + k / (n - 1)))


# ---------------------------------------------------------------- exponential smoothing


def _ets_sse(params, y, trend: bool, damped: bool):
    a, b, phi, l, t = params
    if not trend:
        b = t = 0.0
        phi = 0.0
    elif not damped:
        phi = 1.0
    sse = 0.0
    for v in y:
        f = l + phi * t
        e = v - f
        sse += e * e
        l = f + a * e
        t = phi * t + b * e
    return sse, l, t


def _filter():
    """The 1-D linear filter `_one_step` runs thousands of times a fit: scipy's lfilter core, which lfilter itself
    calls for a denominator of more than one coefficient and no initial conditions (the same numbers, without the
    argument checks that were a third of a fit's time); lfilter where a scipy keeps that core elsewhere."""
    try:
        from scipy.signal._sigtools import _linear_filter
    except ImportError:  # pragma: no cover — another scipy layout: the public function, the same numbers
        from scipy.signal import lfilter

        return lambda b, a, x: lfilter(b, a, x)
    return lambda b, a, x: _linear_filter(np.array(b), np.array(a), x, -1)


def _one_step(params, y: np.ndarray, trend: bool, damped: bool, run=None, impulse=None) -> np.ndarray:
    """One-step forecasts of the additive-error ETS with these parameters, as a linear
    filter of y (the recursion of `_ets_sse`, without a Python loop): the state
    x_t = D x_(t-1) + g y_t with D = A - g w' gives a second-order filter for w' x_t, plus
    the response to the initial state. `run` and `impulse` (the filter and a unit impulse of len(y) + 1 points)
    are made once per fit by the caller."""
    run = run or _filter()
    if impulse is None:
        impulse = np.zeros(len(y) + 1)
        impulse[0] = 1.0
    a, b, phi, l0, t0 = (
        params.tolist() if isinstance(params, np.ndarray) else params
    )  # floats: the same numbers, faster
    if not trend:
        b = t0 = phi = 0.0
    elif not damped:
        phi = 1.0
    d11, d12, d21, d22 = 1 - a, phi * (1 - a), -b, phi * (1 - b)
    tr, det = d11 + d22, d11 * d22 - d12 * d21
    num = [a + phi * b, (-d22 + phi * d21) * a + (d12 - phi * d11) * b]
    den = [1.0, -tr, det]
    h0 = l0 + phi * t0
    h1 = (d11 + phi * d21) * l0 + (d12 + phi * d22) * t0
    free = run([h0, h1 - tr * h0], den, impulse)
    s = run(num, den, y) + free[1:]
    out = np.empty(len(y))
    out[0] = free[0]
    out[1:] = s[:-1]
    return out


class Fits:
    """The ETS fits of one forecast, keyed by the exact series and form: `ses`, `theta` and
    `ets_auto` fit (A,N,N) on the same series at every origin, `holt_damped` and `ets_auto`
    (A,Ad,N). Created per forecast and passed to the candidates (never module state: the
    plugin keeps none), so it lives as long as the request."""

    def __init__(self):
        self._fits: dict = {}

    def ets(self, y: np.ndarray, trend: bool, damped: bool) -> dict:
        y = np.asarray(y, float)
        key = (y.tobytes(), trend, damped)
        fit = self._fits.get(key)
        if fit is None:
            fit = self._fits[key] = fit_ets(y, trend, damped)
        return dict(fit)


def _ets(fits: Fits | None, y, trend: bool, damped: bool) -> dict:
    return fits.ets(y, trend, damped) if fits is not None else fit_ets(np.asarray(y, float), trend, damped)


def _with_forward_gradient(obj, bounds):
    """obj and its forward-difference gradient in one call, for L-BFGS-B's jac=True: the steps and numbers
    scipy's own finite differences take for L-BFGS-B (absolute step 1e-8, its square-root-of-epsilon relative
    step where that does not move x, turned back or shortened at a bound), without the general machinery
    around them (half of a fit's time besides the filter)."""
    lb = np.array([-np.inf if lo is None else lo for lo, _ in bounds], float)
    ub = np.array([np.inf if hi is None else hi for _, hi in bounds], float)
    rel = float(np.sqrt(np.finfo(float).eps))

    def both(x):
        f0 = np.float64(obj(x))
        h = np.where(((x + 1e-8) - x) == 0, rel * ((x >= 0) * 2.0 - 1) * np.maximum(1.0, np.abs(x)), 1e-8)
        lower, upper = x - lb, ub - x
        moved = x + h
        fitting = np.abs(h) <= np.maximum(lower, upper)
        h[((moved < lb) | (moved > ub)) & fitting] *= -1
        forward = (upper >= lower) & ~fitting
        h[forward] = upper[forward]
        backward = (upper < lower) & ~fitting
        h[backward] = -lower[backward]
        g = np.empty(len(x))
        with np.errstate(all="ignore"):
            for i in range(len(x)):
                x1 = x.copy()
                x1[i] = x[i] + h[i]
                g[i] = (np.float64(obj(x1)) - f0) / ((x[i] + h[i]) - x[i])
        return f0, g

    return both


def fit_ets(y: np.ndarray, trend: bool, damped: bool) -> dict:
    """Additive-error ETS (A,N,N), (A,A,N) or (A,Ad,N) by least squares over the
    smoothing parameters and initial states."""
    from scipy.optimize import minimize  # as lfilter above: imported at the first fit

    n = len(y)
    yl = list(map(float, y))
    k0 = min(n, 10)
    slope, icpt = np.polyfit(np.arange(k0), y[:k0], 1) if k0 >= 2 else (0.0, y[0])
    scale = float(np.std(y)) or 1.0
    x0 = [0.3, 0.05, 0.95, float(icpt), float(slope)]
    bounds = [(1e-4, 0.9999), (1e-4, 0.9999), (0.8, 0.98), (None, None), (None, None)]
    if not trend:
        x0, bounds = x0[:1] + [0.0, 0.0, float(y[0]), 0.0], bounds[:1] + [(0, 0), (0, 0), (None, None), (0, 0)]
    elif not damped:
        bounds[2] = (1.0, 1.0)
        x0[2] = 1.0

    run, impulse = _filter(), np.zeros(n + 1)
    impulse[0] = 1.0

    def obj(p):
        if trend and p[1] > p[0]:
            return 1e30
        with np.errstate(all="ignore"):
            v = float(np.sum((y - _one_step(p, y, trend, damped, run, impulse)) ** 2)) / (scale * scale)
        return v if math.isfinite(v) else 1e30

    # the parameters a form fixes (no trend: beta, phi and the slope at 0; no damping: phi at 1) are left out of
    # the search, as scipy's minimize does itself when it takes finite differences
    free = [i for i, (lo, hi) in enumerate(bounds) if lo is None or lo != hi]
    full = np.array(x0, float)

    def searched(q):
        p = full.copy()
        p[free] = q
        return obj(p)

    objective = _with_forward_gradient(searched, [bounds[i] for i in free])
    best = None
    starts = [x0] if not trend else [x0, [0.5, 0.01] + x0[2:]]
    for s in starts:
        r = minimize(
            objective,
            [s[i] for i in free],
            jac=True,
            method="L-BFGS-B",
            bounds=[bounds[i] for i in free],
            options={"maxiter": 200},
        )
        if best is None or r.fun < best.fun:
            best = r
    p = full.copy()
    p[free] = best.x
    sse, l, t = _ets_sse(p, yl, trend, damped)
    a, b, phi = float(p[0]), float(p[1]), float(p[2])
    if not trend:
        b, phi = 0.0, 0.0
    elif not damped:
        phi = 1.0
    k = 1 + 1 + (2 if trend else 0) + (1 if damped else 0)  # alpha, l0, beta, b0, phi
    sigma2 = sse / max(n - k, 1)
    aicc = n * math.log(max(sse / n, 1e-300)) + 2 * (k + 1)
    if n - k - 2 > 0:
        aicc += 2 * (k + 1) * (k + 2) / (n - k - 2)
    else:
        aicc = math.inf
    return {
        "alpha": a,
        "beta": b,
        "phi": phi,
        "level": l,
        "slope": t,
        "sigma2": sigma2,
        "aicc": aicc,
        "trend": trend,
        "damped": damped,
    }


def damped_steps(phi: float, j: np.ndarray) -> np.ndarray:
    """phi + phi^2 + ... + phi^j for each step j: how far a damped trend has carried (j itself undamped)."""
    return j.astype(float) if phi == 1.0 else phi * (1 - phi**j) / (1 - phi)


def project_ets(f: dict, h: int):
    j = np.arange(1, h + 1)
    a, b, phi = f["alpha"], f["beta"], f["phi"]
    if not f["trend"]:
        mean = np.full(h, f["level"])
        c = np.full(h, a)
    elif not f["damped"]:
        mean = f["level"] + j * f["slope"]
        c = a + b * j
    else:
        cum = damped_steps(phi, j)
        mean = f["level"] + cum * f["slope"]
        c = a + b * cum
    var = f["sigma2"] * (1 + np.r_[0.0, np.cumsum(c[:-1] ** 2)])
    return mean, np.sqrt(var)


def ses(y, h, fits: Fits | None = None):
    return project_ets(_ets(fits, y, False, False), h)


def holt_damped(y, h, fits: Fits | None = None):
    return project_ets(_ets(fits, y, True, True), h)


def ets_auto(y, h, fits: Fits | None = None):
    forms = [_ets(fits, y, False, False), _ets(fits, y, True, False), _ets(fits, y, True, True)]
    best = min(forms, key=lambda f: f["aicc"])
    return project_ets(best, h)


def theta(y, h, fits: Fits | None = None):
    """Standard Theta method as SES with drift (Hyndman & Billah 2003)."""
    n = len(y)
    f = _ets(fits, y, False, False)
    b0 = float(np.polyfit(np.arange(n), y, 1)[0])
    a = f["alpha"]
    j = np.arange(1, h + 1)
    mean = f["level"] + 0.5 * b0 * (j - 1 + 1 / a - (1 - a) ** n / a)
    sd = np.sqrt(f["sigma2"] * (1 + (j - 1) * a * a))
    return mean, sd


def theta_optimised(y, h, fits: Fits | None = None):
    """The optimised Theta model (OTM, Fiorucci et al. 2016): theta, alpha and the initial level by in-sample MSE."""
    return ft.project(ft.fit(y, dynamic=False, theta_free=True), h)


def theta_dynamic(y, h, fits: Fits | None = None):
    """The dynamic optimised Theta model (DOTM): as OTM, its trend line refitted on the points seen at each step."""
    return ft.project(ft.fit(y, dynamic=True, theta_free=True), h)


# ---------------------------------------------------------------- complex exponential smoothing


def _ces_matrices(a0: float, a1: float):
    """CES (Svetunkov, Kourentzes & Ord): level l and information potential c, one-step
    forecast l, complex smoothing constant a0 + i a1. Transition F, persistence g."""
    f = np.array([[1.0, a1 - 1.0], [1.0, 1.0 - a0]])
    g = np.array([a0 - a1, a0 + a1])
    return f, g


def _ces_parts(a0: float, a1: float, y: np.ndarray):
    """One-step forecasts of CES as a second-order linear filter of y (x_t = D x_(t-1) + g y_t,
    D = F - g e1'): the part driven by y and the responses to the initial states l0 and c0
    (the forecasts are linear in them). None when D is not stable (errors would not wash out)."""
    from scipy.signal import lfilter

    f, g = _ces_matrices(a0, a1)
    d = f - np.outer(g, [1.0, 0.0])
    tr, det = d[0, 0] + d[1, 1], d[0, 0] * d[1, 1] - d[0, 1] * d[1, 0]
    if not (abs(det) < 1 and abs(tr) < 1 + det):
        return None
    den = [1.0, -tr, det]
    driven = lfilter([g[0], -d[1, 1] * g[0] + d[0, 1] * g[1]], den, y)
    impulse = np.zeros(len(y))
    impulse[0] = 1.0
    # response to x0 = e1 and e2: w' D^t x0 for t = 0, 1, ...; first terms w'x0 and w'D x0
    free = np.column_stack([lfilter([1.0, d[0, 0] - tr], den, impulse), lfilter([0.0, d[0, 1]], den, impulse)])
    return np.r_[0.0, driven[:-1]], free


def _ces_one_step(params, y: np.ndarray) -> np.ndarray | None:
    a0, a1, l0, c0 = params
    parts = _ces_parts(a0, a1, np.asarray(y, float))
    return None if parts is None else parts[0] + parts[1] @ np.array([l0, c0])


def _ces_states(a0: float, a1: float, y: np.ndarray):
    """Least-squares initial states for these constants: (SSE, l0, c0), None when unstable."""
    parts = _ces_parts(a0, a1, y)
    if parts is None:
        return None
    driven, free = parts
    x0, *_ = np.linalg.lstsq(free, y - driven, rcond=None)
    sse = float(np.sum((y - driven - free @ x0) ** 2))
    return (sse, float(x0[0]), float(x0[1])) if math.isfinite(sse) else None


def ces(y, h, fits: Fits | None = None):
    """Complex exponential smoothing (the non-seasonal form) by least squares: the complex
    smoothing constant by Nelder-Mead, the two initial states solved exactly for each
    (the one-step forecasts are linear in them); closed-form error variance."""
    from scipy.optimize import minimize

    y = np.asarray(y, float)
    n = len(y)
    scale = float(np.std(y)) or 1.0

    def obj(p):
        got = _ces_states(p[0], p[1], y)
        return 1e30 if got is None else got[0] / (scale * scale)

    r = minimize(obj, [1.3, 1.0], method="Nelder-Mead", options={"maxiter": 300, "xatol": 1e-4, "fatol": 1e-9})
    got = _ces_states(float(r.x[0]), float(r.x[1]), y)
    if got is None:
        raise ValueError("no stable CES fit")
    a0, a1 = float(r.x[0]), float(r.x[1])
    f, g = _ces_matrices(a0, a1)
    x = np.array(got[1:])
    for v in y:  # the final states
        x = f @ x + g * (v - x[0])
    sigma2 = got[0] / max(n - 4, 1)
    mean, c = np.empty(h), np.empty(h)
    p = np.eye(2)
    for j in range(h):
        mean[j] = (p @ x)[0]
        c[j] = (p @ g)[0]
        p = f @ p
    var = sigma2 * (1 + np.r_[0.0, np.cumsum(c[:-1] ** 2)])
    return mean, np.sqrt(var)


# ---------------------------------------------------------------- ARIMA


def _kpss_needs_diff(x: np.ndarray) -> bool:
    from statsmodels.tsa.stattools import kpss

    if len(x) < 8 or np.ptp(x) == 0:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, p, *_ = kpss(x, regression="c", nlags="auto")
    return p < 0.05


def _psi(ar: np.ndarray, ma: np.ndarray, h: int) -> np.ndarray:
    psi = np.zeros(h)
    psi[0] = 1.0
    for j in range(1, h):
        v = ma[j - 1] if j - 1 < len(ma) else 0.0
        for i, phi in enumerate(ar, start=1):
            if j - i >= 0:
                v += phi * psi[j - i]
        psi[j] = v
    return psi


ARIMA_ORDERS = ((1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (2, 1))


def arima(y, h, fits: Fits | None = None):
    """ARIMA(p,d,q) with d in {0,1,2} by KPSS tests, drift when the mean of the
    differenced series is clearly non-zero, (p,q) by AICc."""
    from statsmodels.tsa.arima.model import ARIMA

    d = 0
    x = np.asarray(y, float)
    while d < 2 and _kpss_needs_diff(x):
        x = np.diff(x)
        d += 1
    mu = float(x.mean())
    se = float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else 0.0
    use_mean = d == 0 or (se > 0 and abs(mu) > 1.96 * se)
    w = x - mu if use_mean else x
    best = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p, q in ARIMA_ORDERS:
            if len(w) < 3 * (p + q) + 8:
                continue
            try:
                r = ARIMA(w, order=(p, 0, q), trend="n").fit(method="hannan_rissanen")
            except Exception:  # noqa: BLE001, S112 — an order that cannot be estimated is skipped
                continue
            if not np.isfinite(r.aicc):
                continue
            if best is None or r.aicc < best[0]:
                best = (r.aicc, r, p, q)
    if best is None:
        ar, ma, sigma2, wf = np.zeros(0), np.zeros(0), float(np.var(w)), np.zeros(h)
    else:
        r = best[1]
        ar = np.asarray(r.arparams)
        ma = np.asarray(r.maparams)
        sigma2 = float(r.params[-1])
        wf = np.asarray(r.forecast(h))
    wf = wf + (mu if use_mean else 0.0)
    psi = _psi(ar, ma, h)
    mean = wf
    last = np.asarray(y, float)
    for k in range(d):
        base = np.diff(last, n=d - 1 - k)[-1] if d - 1 - k > 0 else last[-1]
        mean = base + np.cumsum(mean)
        psi = np.cumsum(psi)
    var = sigma2 * np.cumsum(psi**2)
    return mean, np.sqrt(var)


# ---------------------------------------------------------------- catalogue

# name -> (runs on seasonally adjusted series, function); cheap ones first.
CANDIDATES = {
    "naive": (False, naive),
    "seasonal_naive": (False, None),
    "naive2": (True, naive),
    "drift": (True, drift),
    "ses": (True, ses),
    "holt_damped": (True, holt_damped),
    "theta": (True, theta),
    "ets_auto": (True, ets_auto),
    "ces": (True, ces),
    "arima": (True, arima),
    "theta_optimised": (True, theta_optimised),
    "theta_dynamic": (True, theta_dynamic),
}
