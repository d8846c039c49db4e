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


def autoets(train, h, m):
    """statsforecast's AutoETS (its own model selection by AICc), the plain-library baseline."""
    from statsforecast.models import AutoETS

    r = AutoETS(season_length=m).forecast(y=train, h=h, level=[80, 95])
    return r["mean"], {80: (r["lo-80"], r["hi-80"]), 95: (r["lo-95"], r["hi-95"])}


def covered(test, lo, hi) -> float:
    return float(np.mean((test >= lo) & (test <= hi)))


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = args[0] if args else DEFAULT
    detail = "--series" in sys.argv
    data = defaultdict(lambda: {"train": [], "test": []})
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            d = data[row["unique_id"]]
            d["freq"] = row["frequency"]
            d[row["split"]].append((int(row["t"]), float(row["y"])))
    autoets(np.arange(1.0, 30.0), 2, 1)  # statsforecast compiles on first use: not counted
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
        t0 = time.perf_counter()
        sf, sf_iv = autoets(y, h, m)
        sf_seconds += time.perf_counter() - t0
        n2 = naive2(y, h, m)
        row = {
            "id": uid,
            "freq": d["freq"],
            "smape": smape(test, f),
            "mase": mase(y, test, f, m),
            "n2_smape": smape(test, n2),
            "n2_mase": mase(y, test, n2, m),
            "sf_smape": smape(test, sf),
            "sf_mase": mase(y, test, sf, m),
            "method": out["meta"]["method"],
            "seconds": spent,
        }
        for lv in (80, 95):
            row[f"c{lv}"] = covered(
                test, np.array([x["lower"][str(lv)] for x in iv]), np.array([x["upper"][str(lv)] for x in iv])
            )
            row[f"sf_c{lv}"] = covered(test, *sf_iv[lv])
        rows.append(row)

    def summary(rs):
        s2 = np.mean([r["n2_smape"] for r in rs])
        m2 = np.mean([r["n2_mase"] for r in rs])
        s = np.mean([r["smape"] for r in rs])
        ma = np.mean([r["mase"] for r in rs])
        ss = np.mean([r["sf_smape"] for r in rs])
        sm = np.mean([r["sf_mase"] for r in rs])
        owa, sf = 0.5 * (s / s2 + ma / m2), 0.5 * (ss / s2 + sm / m2)
        mean = lambda k: round(float(np.mean([r[k] for r in rs])), 3)  # noqa: E731
        return {
            "owa": round(owa, 4),
            "autoets_owa": round(sf, 4),
            "ratio": round(owa / sf, 4),
            "smape": round(float(s), 4),
            "mase": round(float(ma), 4),
            "cover80": mean("c80"),
            "cover95": mean("c95"),
            "autoets_cover80": mean("sf_c80"),
            "autoets_cover95": mean("sf_c95"),
            "seconds": mean("seconds"),
            "series": len(rs),
        }

    if detail:
        for r in rows:
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}))
    by = {f: summary([r for r in rows if r["freq"] == f]) for f in dict.fromkeys(r["freq"] for r in rows)}
    print(
        f"{'':10} {'series':>6} {'OWA':>7} {'AutoETS':>8} {'ratio':>6} {'cov80':>6} {'cov95':>6} "
        f"{'AE cov80':>8} {'AE cov95':>8} {'s/series':>8}"
    )
    for name, s in [*by.items(), ("overall", summary(rows))]:
        print(
            f"{name:10} {s['series']:6d} {s['owa']:7.3f} {s['autoets_owa']:8.3f} {s['ratio']:6.3f} "
            f"{s['cover80']:6.3f} {s['cover95']:6.3f} {s['autoets_cover80']:8.3f} {s['autoets_cover95']:8.3f} {s['seconds']:8.3f}"
        )
    print(
        json.dumps(
            {
                **summary(rows),
                "seconds_per_series": round(seconds / len(rows), 4),
                "max_seconds": round(max(r["seconds"] for r in rows), 4),
                "autoets_seconds_per_series": round(sf_seconds / len(rows), 4),
                "by_frequency": by,
            }
        )
    )


if __name__ == "__main__":
    main()
