"""Forecast bench: the 49 M3/M4 series of bench/instances/forecasting/series.csv.

Each series' training part is sent through `run_forecast` (frequency token given,
integer index t, horizon = the official test length); the forecast is scored on the
official test part with the M4 definitions: sMAPE, MASE (scale: in-sample seasonal
naive with m = 1 yearly/weekly/daily/other, 4 quarterly, 12 monthly, 24 hourly) and
OWA = mean of sMAPE and MASE each divided by Naive2's (Naive2: naive on the series
seasonally adjusted by classical multiplicative decomposition when the 90 %
autocorrelation test at lag m passes). statsforecast's AutoETS runs on the same
series as the plain-library baseline (OWA, ratio ours / its). Interval coverage: the
share of test points inside the 80 % and 95 % intervals, per series, averaged over
the series. Prints a table per frequency, then one JSON line (with seconds per
series); `--series` also prints one line per series first.

    .venv/bin/python bench/forecast.py [path/to/series.csv] [--series]
"""

from __future__ import annotations

import os as _os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # single-core figures
    _os.environ.setdefault(_v, "1")

import csv
import json
import math
import os
import sys
import time
from collections import defaultdict

import numpy as np

from tollway_predict import forecast_models as fm
from tollway_predict.forecast import ForecastBlock, Point, run_forecast

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "instances", "forecasting", "series.csv")  # see instances/README.md
M4_M = {"Yearly": 1, "Quarterly": 4, "Monthly": 12, "Hourly": 24, "Weekly": 1, "Daily": 1, "Other": 1}
TOKEN = {
    "Yearly": "yearly",
    "Quarterly": "quarterly",
    "Monthly": "monthly",
    "Hourly": "hourly",
    "Weekly": "weekly",
    "Daily": "daily",
    "Other": None,
}


def smape(a, f):
    return float(np.mean(200 * np.abs(a - f) / (np.abs(a) + np.abs(f))))


def mase(train, a, f, m):
    return float(np.mean(np.abs(a - f)) / np.mean(np.abs(train[m:] - train[:-m])))


def naive2(train, h, m):
    season = fm.Season(train, m)
    if season.kind == "additive":  # M4 Naive2 is multiplicative only
        season = fm.Season(train, 1)
    mean, sd = fm.naive(season.adjust(train), h)
    return season.restore(mean, sd)[0]


BASELINES = ("AutoETS", "AutoTheta", "AutoCES", "AutoARIMA")


def baseline(name, train, h, m):
    """One of statsforecast's automatic models (its own selection by AICc): mean and the 80 / 95 % bounds."""
    import statsforecast.models as sm

    r = getattr(sm, name)(season_length=m).forecast(y=train, h=h, level=[80, 95])
    return {
        "mean": np.asarray(r["mean"], float),
        80: (np.asarray(r["lo-80"], float), np.asarray(r["hi-80"], float)),
        95: (np.asarray(r["lo-95"], float), np.asarray(r["hi-95"], float)),
    }


def median_anchor(runs: dict) -> dict:
    """The median of the statsforecast models that ran: point forecasts and each bound taken pointwise
    (the M4-style median combination of AutoETS, AutoTheta, AutoCES and AutoARIMA)."""
    got = [runs[k] for k in BASELINES if k in runs]
    med = lambda xs: np.median(np.vstack(xs), axis=0)  # noqa: E731
    return {
        "mean": med([g["mean"] for g in got]),
        **{lv: (med([g[lv][0] for g in got]), med([g[lv][1] for g in got])) for lv in (80, 95)},
    }


def baselines(uid, train, h, m, cache: dict) -> tuple[dict, float]:
    """Every baseline on one series (from `cache` when it holds the series), and their seconds."""
    key = f"{uid}/{len(train)}/{h}"
    if key in cache:
        c = cache[key]
        runs = {
            k: {"mean": np.array(v["mean"]), **{lv: tuple(map(np.array, v[str(lv)])) for lv in (80, 95)}}
            for k, v in c["runs"].items()
        }
        return runs, c["seconds"]
    runs, t0 = {}, time.perf_counter()
    for name in BASELINES:
        try:
            runs[name] = baseline(name, train, h, m)
        except Exception as exc:  # noqa: BLE001 — a baseline that fails is left out of the median
            print(f"{uid}: {name} failed: {exc}", file=sys.stderr)
    spent = time.perf_counter() - t0
    cache[key] = {
        "seconds": spent,
        "runs": {
            k: {"mean": v["mean"].tolist(), **{str(lv): [v[lv][0].tolist(), v[lv][1].tolist()] for lv in (80, 95)}}
            for k, v in runs.items()
        },
    }
    return runs, spent


def covered(test, lo, hi) -> float:
    return float(np.mean((test >= lo) & (test <= hi)))


ANCHORS = {"AutoETS": "ets", "AutoTheta": "theta", "AutoCES": "ces", "AutoARIMA": "arima", "median": "median"}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = args[0] if args else DEFAULT
    detail = "--series" in sys.argv
    cache_path = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--cache=")), None)
    cache = {}
    if cache_path and os.path.exists(cache_path):
        with open(cache_path) as fh:
            cache = json.load(fh)
    data = defaultdict(lambda: {"train": [], "test": []})
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            d = data[row["unique_id"]]
            d["freq"] = row["frequency"]
            d[row["split"]].append((int(row["t"]), float(row["y"])))
    for name in BASELINES:  # statsforecast compiles on first use: not counted
        baseline(name, np.arange(1.0, 30.0), 2, 1)
    rows, seconds, sf_seconds = [], 0.0, 0.0
    for uid, d in data.items():
        train = sorted(d["train"])
        test = np.array([v for _, v in sorted(d["test"])])
        h, m = len(test), M4_M[d["freq"]]
        block = ForecastBlock(series=[Point(t=t, y=v) for t, v in train], horizon=h, frequency=TOKEN[d["freq"]])
        t0 = time.perf_counter()
        out = run_forecast(block, 60.0)
        spent = time.perf_counter() - t0
        seconds += spent
        f = np.array([p["value"] for p in out["prediction"]])
        iv = out["uncertainty"]["intervals"]
        y = np.array([v for _, v in train])
        runs, sf_spent = baselines(uid, y, h, m, cache)
        sf_seconds += sf_spent
        runs["median"] = median_anchor(runs)
        n2 = naive2(y, h, m)
        row = {
            "id": uid,
            "freq": d["freq"],
            "smape": smape(test, f),
            "mase": mase(y, test, f, m),
            "n2_smape": smape(test, n2),
            "n2_mase": mase(y, test, n2, m),
            "method": out["meta"]["method"],
            "seconds": spent,
        }
        for name, tag in ANCHORS.items():
            if name in runs:
                row[f"{tag}_smape"] = smape(test, runs[name]["mean"])
                row[f"{tag}_mase"] = mase(y, test, runs[name]["mean"], m)
        for lv in (80, 95):
            row[f"c{lv}"] = covered(
                test, np.array([x["lower"][str(lv)] for x in iv]), np.array([x["upper"][str(lv)] for x in iv])
            )
            for name, tag in ANCHORS.items():
                if name in runs:
                    row[f"{tag}_c{lv}"] = covered(test, *runs[name][lv])
        rows.append(row)
    if cache_path:
        with open(cache_path, "w") as fh:
            json.dump(cache, fh)

    def summary(rs):
        s2 = np.mean([r["n2_smape"] for r in rs])
        m2 = np.mean([r["n2_mase"] for r in rs])

        def owa(tag):
            pre = f"{tag}_" if tag else ""
            if any(f"{pre}smape" not in r for r in rs):
                return math.nan
            s = np.mean([r[f"{pre}smape"] for r in rs])
            ma = np.mean([r[f"{pre}mase"] for r in rs])
            return 0.5 * (s / s2 + ma / m2)

        mean = lambda k: round(float(np.mean([r[k] for r in rs])) if all(k in r for r in rs) else math.nan, 3)  # noqa: E731
        ours = owa("")
        out = {
            "owa": round(ours, 4),
            **{f"{tag}_owa": round(owa(tag), 4) for tag in ANCHORS.values()},
            "smape": round(float(np.mean([r["smape"] for r in rs])), 4),
            "mase": round(float(np.mean([r["mase"] for r in rs])), 4),
            "cover80": mean("c80"),
            "cover95": mean("c95"),
            **{f"{tag}_cover{lv}": mean(f"{tag}_c{lv}") for tag in ("ets", "median") for lv in (80, 95)},
            "seconds": mean("seconds"),
            "series": len(rs),
        }
        out["ratio_ets"] = round(ours / out["ets_owa"], 4)
        out["ratio_median"] = round(ours / out["median_owa"], 4)
        return out

    if detail:
        for r in rows:
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}))
    by = {f: summary([r for r in rows if r["freq"] == f]) for f in dict.fromkeys(r["freq"] for r in rows)}
    print(
        f"{'':10} {'series':>6} {'OWA':>6} {'ETS':>6} {'Theta':>6} {'CES':>6} {'ARIMA':>6} {'median':>6} "
        f"{'cov80':>6} {'cov95':>6} {'med c80':>7} {'med c95':>7} {'s/ser':>6}"
    )
    for name, s in [*by.items(), ("overall", summary(rows))]:
        print(
            f"{name:10} {s['series']:6d} {s['owa']:6.3f} {s['ets_owa']:6.3f} {s['theta_owa']:6.3f} {s['ces_owa']:6.3f} "
            f"{s['arima_owa']:6.3f} {s['median_owa']:6.3f} {s['cover80']:6.3f} {s['cover95']:6.3f} "
            f"{s['median_cover80']:7.3f} {s['median_cover95']:7.3f} {s['seconds']:6.3f}"
        )
    print(
        json.dumps(
            {
                **summary(rows),
                "seconds_per_series": round(seconds / len(rows), 4),
                "max_seconds": round(max(r["seconds"] for r in rows), 4),
                "baseline_seconds_per_series": round(sf_seconds / len(rows), 4),
                "by_frequency": by,
            }
        )
    )


if __name__ == "__main__":
    main()
