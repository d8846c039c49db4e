"""Seasonal exponential smoothing (statsmodels ETSModel): the form chosen by AICc once per series, refitted per origin."""

from __future__ import annotations

import math
import warnings

import numpy as np

# (error, trend, damped, seasonal): the seasonal forms of the usual automatic ETS set
# (additive error with a multiplicative season left out, as numerically unstable);
# multiplicative ones only for positive series
FORMS = (
    ("add", None, False, "add"),
    ("add", "add", False, "add"),
    ("add", "add", True, "add"),
    ("mul", None, False, "add"),
    ("mul", "add", False, "add"),
    ("mul", "add", True, "add"),
    ("mul", None, False, "mul"),
    ("mul", "add", False, "mul"),
    ("mul", "add", True, "mul"),
)
MAX_PERIOD = 12  # longer cycles (hourly 24, weekly 52) cost too many seasonal states to fit in time
SEASONS = 20  # fitted on at most the last 20 cycles
CHOOSE_ITERATIONS = 80  # enough to rank the forms by AICc; the chosen one is refitted in full


def usable(y: np.ndarray, m: int) -> bool:
    return 1 < m <= MAX_PERIOD and len(y) >= 2 * m + 4


def _model(y: np.ndarray, m: int, form):
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    error, trend, damped, seasonal = form
    return ETSModel(
        np.asarray(y, float), error=error, trend=trend, damped_trend=damped, seasonal=seasonal, seasonal_periods=m
    )


def _fit(y, m, form, start=None, maxiter=200):
    y = y[-SEASONS * m :]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _model(y, m, form).fit(disp=False, start_params=start, maxiter=maxiter)


def choose(y: np.ndarray, m: int) -> tuple[tuple, np.ndarray] | None:
    """The form with the least AICc on y and its fitted parameters (None if none fits)."""
    positive = bool(np.all(y > 0))
    best = None
    for form in FORMS:
        if not positive and (form[0] == "mul" or form[3] == "mul"):
            continue
        try:
            r = _fit(y, m, form, maxiter=CHOOSE_ITERATIONS)
        except Exception:  # noqa: BLE001, S112 — a form that cannot be fitted is skipped
            continue
        aicc = float(r.aicc)
        if math.isfinite(aicc) and (best is None or aicc < best[0]):
            best = (aicc, form, np.asarray(r.params, float))
    return None if best is None else (best[1], best[2])


def forecast(y: np.ndarray, h: int, m: int, form, start=None):
    """Fit `form` on y (warm-started at `start`), project h steps: (mean, sd). The sd is
    the closed-form additive-error one (relative to the level for multiplicative error)."""
    r = _fit(y, m, form, start)
    mean = np.asarray(r.forecast(h), float)
    p = dict(zip(r.model.param_names, np.asarray(r.params, float)))
    a = p.get("smoothing_level", 0.0)
    b = p.get("smoothing_trend", 0.0) if form[1] else 0.0
    g = p.get("smoothing_seasonal", 0.0)
    phi = p.get("damping_trend", 1.0) if form[2] else 1.0
    j = np.arange(1, h)
    cum = j.astype(float) if phi == 1.0 else phi * (1 - phi**j) / (1 - phi)
    c = a + b * cum + g * (j % m == 0)
    growth = np.sqrt(1 + np.r_[0.0, np.cumsum(c**2)])
    fitted = np.asarray(r.fittedvalues, float)
    yy = np.asarray(y, float)[-len(fitted) :]
    resid = (yy - fitted) / np.where(fitted != 0, fitted, 1.0) if form[0] == "mul" else yy - fitted
    sigma = float(np.sqrt(np.mean(resid**2))) if len(resid) else 0.0
    sd = sigma * growth * (np.abs(mean) if form[0] == "mul" else 1.0)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))):
        raise ValueError("non-finite seasonal ETS forecast")
    return mean, sd
