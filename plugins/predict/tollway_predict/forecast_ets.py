"""Seasonal exponential smoothing (statsmodels ETSModel): the form chosen by AICc once per series, refitted per origin."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .forecast_models import damped_steps

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
# the damped additive Holt-Winters form, fitted as it is (no choice by AICc): the `holt_winters` member of
# the monthly and quarterly combinations (forecast_choice), beside the AICc-chosen `ets_seasonal`
HOLT_WINTERS = ("add", "add", True, "add")
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


class _Fit:
    """A fitted form: parameters, AICc, one-step fitted values and the final states. Built from
    the optimiser's parameters and one smoothing pass: statsmodels' results object would also
    take the Hessian of the likelihood (a third of a fit's time) for standard errors never used."""

    def __init__(self, y: np.ndarray, m: int, form, start=None, maxiter=200):
        self.form, self.m = form, m
        self.y = np.asarray(y, float)[-SEASONS * m :]
        model = _model(self.y, m, form)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.params = np.asarray(
                model.fit(disp=False, start_params=start, maxiter=maxiter, return_params=True), float
            )
            self.fitted, states = model.smooth(self.params, return_raw=True)
            llf = float(model.loglike(self.params))
        self.fitted, states = np.asarray(self.fitted, float), np.asarray(states, float)
        self.names = list(model.param_names)
        n, k = len(self.y), len(self.params) + 1  # + 1: the error variance, as statsmodels counts it
        self.aicc = -2 * llf + 2 * k + (2 * k * (k + 1) / (n - k - 1) if n - k - 1 > 0 else math.inf)
        self.level = states[-1, 0]
        self.trend = states[-1, 1] if form[1] else 0.0
        self.season = states[-m:, -1]  # the seasonal states of the last cycle, oldest first

    def param(self, name: str, default: float) -> float:
        return float(self.params[self.names.index(name)]) if name in self.names else default

    def project(self, h: int) -> np.ndarray:
        """Point forecasts: level plus the (damped) trend, with the season of the last cycle."""
        phi = self.param("damping_trend", 1.0) if self.form[2] else 1.0
        j = np.arange(1, h + 1)
        cum = damped_steps(phi, j)
        base = self.level + cum * self.trend
        s = self.season[(j - 1) % self.m]
        return base * s if self.form[3] == "mul" else base + s


def choose(y: np.ndarray, m: int) -> tuple[tuple, np.ndarray] | None:
    """The form with the least AICc on y and its fitted parameters (None if none fits)."""
    positive = bool(np.all(y > 0))
    best = None
    for form in FORMS:
        # a positive series ranks the multiplicative-error forms only (the additive-error ones
        # give nearly the same point forecasts, and half the time of the choice was theirs)
        if (form[0] == "mul") != positive:
            continue
        try:
            r = _Fit(y, m, form, maxiter=CHOOSE_ITERATIONS)
        except Exception:  # noqa: BLE001, S112 — a form that cannot be fitted is skipped
            continue
        if math.isfinite(r.aicc) and (best is None or r.aicc < best[0]):
            best = (r.aicc, form, r.params)
    return None if best is None else (best[1], best[2])


def forecast(y: np.ndarray, h: int, m: int, form, start=None):
    """Fit `form` on y (warm-started at `start`), project h steps: (mean, sd). The sd is
    the closed-form additive-error one (relative to the level for multiplicative error)."""
    r = _Fit(y, m, form, start)
    mean = r.project(h)
    a = r.param("smoothing_level", 0.0)
    b = r.param("smoothing_trend", 0.0) if form[1] else 0.0
    g = r.param("smoothing_seasonal", 0.0)
    phi = r.param("damping_trend", 1.0) if form[2] else 1.0
    j = np.arange(1, h)
    cum = damped_steps(phi, j)
    c = a + b * cum + g * (j % m == 0)
    growth = np.sqrt(1 + np.r_[0.0, np.cumsum(c**2)])
    fitted = r.fitted
    yy = r.y
    resid = (yy - fitted) / np.where(fitted != 0, fitted, 1.0) if form[0] == "mul" else yy - fitted
    sigma = float(np.sqrt(np.mean(resid**2))) if len(resid) else 0.0
    sd = sigma * growth * (np.abs(mean) if form[0] == "mul" else 1.0)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))):
        raise ValueError("non-finite seasonal ETS forecast")
    return mean, sd
