"""Rolling-origin backtest of forecast candidates: origins, scores, combination weights and interval calibration."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

ORIGINS = 3  # backtest origins when the series is long enough
BENCHMARKS = ("naive", "naive2", "seasonal_naive", "drift")  # scored, never combined
# each may replace the median of a long-cycle series (`long_cycle_pick`); there, neither is a member
LONG_CYCLE = ("seasonal_naive", "sarima")
# what `long_cycle_pick` weighs against the median: those two and `arima` (on the seasonally adjusted
# series), which stays a member of the median as well (`forecast-6`)
LONG_CYCLE_PICKS = (*LONG_CYCLE, "arima")
COMBINE = 3  # candidates combined
_NORMAL = NormalDist()  # the standard normal: the standard library's quantile, no scipy.stats import (1.7 s) at start


def origins(n: int, h: int, m: int) -> list[int]:
    """Training lengths of the backtest origins, latest first: each leaves a full horizon
    to score, origins are half a horizon apart, and each keeps at least max(8, 2 m)
    points (two seasons) to fit on. Without room for one, a single shorter tail of
    min(h, n // 3) points is held out."""
    step = max(1, (h + 1) // 2)
    least = max(8, 2 * m if m > 1 else 0)
    out = [n - h - k * step for k in range(ORIGINS)]
    out = [o for o in out if o >= least]
    return out or [n - max(1, min(h, n // 3))]


def smape(a, f) -> float:
    d = np.abs(a) + np.abs(f)
    r = np.where(d > 0, 2 * np.abs(a - f) / np.where(d > 0, d, 1), 0.0)
    return 100 * float(np.mean(r))


def scale(y, m) -> float:
    m = m if len(y) > m else 1
    d = np.abs(y[m:] - y[:-m])
    return float(np.mean(d)) if len(d) else 0.0


def mase(a, f, sc) -> float:
    e = float(np.mean(np.abs(a - f)))
    return e / sc if sc > 0 else e


def score_origin(train, test, fits: dict, m: int) -> dict:
    """sMAPE and MASE of every candidate at one origin."""
    sc = scale(train, m)
    return {
        k: {"smape": smape(test, mean[: len(test)]), "mase": mase(test, mean[: len(test)], sc)}
        for k, (mean, _sd) in fits.items()
    }


def average(per_origin: list[dict]) -> dict:
    """sMAPE and MASE averaged over the origins, for the candidates scored at every one,
    and the OWA-like score: the mean of each relative to naive2's (naive's when naive2
    is missing) — ratios of averages, as OWA itself is defined."""
    if not per_origin:
        return {}
    common = set(per_origin[0]).intersection(*per_origin[1:])
    s = {
        k: {f: float(np.mean([p[k][f] for p in per_origin])) for f in ("smape", "mase")}
        for k in per_origin[0]
        if k in common
    }
    ref = s.get("naive2") or s.get("naive")
    for v in s.values():
        if ref and ref["smape"] > 0 and ref["mase"] > 0:
            v["score"] = 0.5 * (v["smape"] / ref["smape"] + v["mase"] / ref["mase"])
        else:
            v["score"] = v["smape"] / 100 + v["mase"]
    return s


def weights(scores: dict, order: list[str]) -> dict[str, float]:
    """Inverse-score weights of the COMBINE best model-based candidates (ties broken by
    catalogue order). The benchmarks (naive, naive2, seasonal naive, drift) are scored as
    references but not combined: over a few short backtest tails they win by luck more
    often than they forecast better, and the smoothing models nest them (SES with alpha
    near 1 is naive)."""
    pool = [k for k in order if k in scores and k not in BENCHMARKS] or [k for k in order if k in scores]
    ranked = sorted(pool, key=lambda k: (scores[k]["score"], order.index(k)))[:COMBINE]
    if not ranked:
        return {}
    if scores[ranked[0]]["score"] <= 0:
        return {ranked[0]: 1.0}
    inv = {k: 1.0 / scores[k]["score"] for k in ranked}
    total = sum(inv.values())
    return {k: v / total for k, v in inv.items()}


def combine(fits: dict, w: dict[str, float], how: str = "weighted") -> tuple[np.ndarray, np.ndarray]:
    """The combined forecast of the members present: their weighted mean (weights
    renormalised), with how="median" their pointwise median, with how="trimmed" the pointwise
    mean of what is left when the lowest and the highest member are set aside (four members or
    more; the plain mean of fewer); the sd is the weighted mean of the members' sds either way
    (the intervals are calibrated on it)."""
    members = [k for k in w if k in fits]
    tot = sum(w[k] for k in members)
    sd = sum(w[k] / tot * fits[k][1] for k in members)
    if how == "median":
        mean = np.median(np.vstack([fits[k][0] for k in members]), axis=0)
    elif how == "trimmed":
        means = np.sort(np.vstack([fits[k][0] for k in members]), axis=0)
        mean = (means[1:-1] if len(members) >= 4 else means).mean(axis=0)
    else:
        mean = sum(w[k] / tot * fits[k][0] for k in members)
    return np.asarray(mean, float), np.asarray(sd, float)


def combination(scores: dict, order: list[str]) -> tuple[str, dict[str, float]]:
    """How to combine: the pointwise median of every model-based candidate scored (the M4
    rule for statistical combinations: nothing is selected on a few short backtest tails),
    or, with fewer than three of them, the inverse-score weighted mean of the best COMBINE.
    Choosing per series between the median and the weighted best three by their backtest
    scores was tried and lost (the weights are picked on the same tails, so the weighted
    mean always looks better there than it forecasts): see docs/predict.md."""
    pool = [k for k in order if k in scores and k not in BENCHMARKS]
    if len(pool) < 3:
        return "weighted", weights(scores, order)
    return "median", {k: 1.0 / len(pool) for k in pool}


def long_cycle_pick(scores: dict, median_score: float) -> str | None:
    """For a long cycle: the one of LONG_CYCLE_PICKS with the best backtest score when it beat the
    median's own score (ties to the median, then to catalogue order); None keeps the median."""
    best = None
    for k in LONG_CYCLE_PICKS:
        if k in scores and scores[k]["score"] < (median_score if best is None else scores[best]["score"]):
            best = k
    return best


def combined_score(trains, tests, fitted, w, how, m) -> float | None:
    """The backtest score of the combined forecast itself (same definition as the candidates':
    sMAPE and MASE averaged over the origins where every member and naive2 fitted, each
    relative to naive2's). None when no origin has them all."""
    per = []
    for train, test, fits in zip(trains, tests, fitted):
        if "naive2" not in fits or not all(k in fits for k in w):
            continue
        per.append(score_origin(train, test, {"combined": combine(fits, w, how), "naive2": fits["naive2"]}, m))
    if not per:
        return None
    return average(per)["combined"]["score"]


def ratios(tests: list[np.ndarray], combos: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """|error| / model sd of the combined forecast at every origin and step."""
    out = []
    for test, (mean, sd) in zip(tests, combos):
        k = len(test)
        e = np.abs(test - mean[:k])
        s = sd[:k]
        ok = s > 0
        out.append(e[ok] / s[ok])
    return np.concatenate(out) if out else np.zeros(0)


def multiplier(z: np.ndarray, level: float) -> float:
    """Half-width of the `level` % interval in model sds, from the backtest ratios z:
    the larger of the split-conformal quantile (rank ceil((N + 1) p)) and the normal
    quantile at the robust scale median(z) / 0.6745 (a few dozen correlated ratios
    estimate the body well but the tail poorly: the empirical 95 % point is often just
    the largest one). Below the 90 % level, inside the body the ratios do estimate, the
    multiplier is halfway between the conformal quantile alone and that larger value (the
    larger value alone covered 80 % intervals up to 5 points high, the conformal quantile alone
    up to 4.4 low). Normal quantile when there is nothing to calibrate on. (`forecast-3` also
    widened it by sqrt(1 + 1 / origins): 80 % intervals covered 8 to 9 points high once the median
    replaced a selection on the backtest tails; see docs/predict.md.)"""
    p = level / 100
    zn = _NORMAL.inv_cdf(0.5 + p / 2)
    z = np.sort(z[np.isfinite(z)])
    n = len(z)
    if n == 0:
        return zn
    r = math.ceil((n + 1) * p)
    q = float(z[r - 1]) if r <= n else float(z[-1]) * (1 + (r - n) / n)
    robust = float(z[n // 2] if n % 2 else 0.5 * (z[n // 2 - 1] + z[n // 2])) / 0.6745
    tail = max(q, robust * zn)
    return tail if p >= 0.9 else 0.5 * (q + tail)
