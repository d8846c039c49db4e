"""Forecast bench: the 49 M3/M4 series of bench/instances/forecasting/series.csv.

Each series' training part is sent through `run_forecast` (frequency token given,
integer index t, horizon = the official test length); the forecast is scored on the
official test part with the M4 definitions: sMAPE, MASE (scale: in-sample seasonal
naive with m = 1 yearly/weekly/daily/other, 4 quarterly, 12 monthly, 24 hourly) and
OWA = mean of sMAPE and MASE each divided by Naive2's (Naive2: naive on the series
seasonally adjusted by classical multiplicative decomposition when the 90 %
autocorrelation test at lag m passes). Prints one JSON line.

    .venv/bin/python bench/forecast.py [path/to/series.csv]
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
TOKEN = {"Yearly": "yearly", "Quarterly": "quarterly", "Monthly": "monthly", "Hourly": "hourly",
         "Weekly": "weekly", "Daily": "daily", "Other": None}


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


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    data = defaultdict(lambda: {"train": [], "test": []})
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            d = data[row["unique_id"]]
            d["freq"] = row["frequency"]
            d[row["split"]].append((int(row["t"]), float(row["y"])))
    rows, seconds = [], 0.0
    for d in data.values():
        train = sorted(d["train"])
        test = np.array([v for _, v in sorted(d["test"])])
        h, m = len(test), M4_M[d["freq"]]
        block = ForecastBlock(series=[Point(t=t, y=v) for t, v in train], horizon=h, frequency=TOKEN[d["freq"]])
        t0 = time.perf_counter()
        out = run_forecast(block, 60.0)
        seconds += time.perf_counter() - t0
        f = np.array([p["value"] for p in out["prediction"]])
        y = np.array([v for _, v in train])
        n2 = naive2(y, h, m)
        rows.append({"freq": d["freq"], "smape": smape(test, f), "mase": mase(y, test, f, m),
                     "n2_smape": smape(test, n2), "n2_mase": mase(y, test, n2, m), "method": out["meta"]["method"]})

    def summary(rs):
        s = np.mean([r["smape"] for r in rs]); ma = np.mean([r["mase"] for r in rs])
        s2 = np.mean([r["n2_smape"] for r in rs]); m2 = np.mean([r["n2_mase"] for r in rs])
        return {"owa": round(0.5 * (s / s2 + ma / m2), 4), "smape": round(float(s), 4), "mase": round(float(ma), 4),
                "series": len(rs)}

    overall = summary(rows)
    by = {f: summary([r for r in rows if r["freq"] == f]) for f in dict.fromkeys(r["freq"] for r in rows)}
    print(json.dumps({**{k: overall[k] for k in ("owa", "smape", "mase")},
                      "seconds_per_series": round(seconds / len(rows), 4), "series": len(rows), "by_frequency": by}))


if __name__ == "__main__":
    main()
