"""Frequency-level combination: which members each frequency combines, and how, as chosen across many series."""

from __future__ import annotations

import types

# For a frequency listed here the forecast combines only these members, by their pointwise "median", their
# equal-weight "mean" or their "trimmed" mean (pointwise, the lowest and the highest member set aside when
# there are four or more); any other frequency (daily, hourly, a seasonal period given without a frequency)
# keeps the median of every model-based candidate but those of LISTED_ONLY. Chosen once across series, not
# per series: on the development set (M3 and M4 series disjoint from the bench and the held-out set,
# docs/predict.md, `forecast-6`) members were cut one at a time while the cut lowered the group's OWA by
# 0.003 or more, for the median and for the mean, and the better of the two was kept when the held-out
# set confirmed it. `other`: a series with no frequency and no seasonal period (M3's "other" series).
# Monthly and quarterly (`forecast-7`): chosen over every subset of ten members and the three rules on the
# development set and a second one of 200 M3 series (bench/forecast_sets.py --seasonal-extra), for the
# lowest of the worse of the two OWA ratios to `forecast-6`'s, then run once on the held-out set.
# `holt_winters` and `ets_seasonal` join only a series the seasonality test finds seasonal; `naive2`
# (naive on the seasonally adjusted series) is scored as a benchmark everywhere and a member here.
# Yearly (`forecast-7`): the cut above, from every non-seasonal member with the optimised and dynamic
# optimised Theta models, on the development set's 150 yearly series and the 445 other M3 yearly series
# (bench/forecast_sets.py --extra-yearly): only `ces` went.
# Monthly (`forecast-8`): `mapa` (forecast_aggregation: a damped-trend ETS on buckets of 1 to 12 months, the
# median over the bucket sizes) in place of `theta`, chosen on the development and the seasonal-extra set as
# the `forecast-7` rows were; quarterly and yearly kept their members (docs/predict.md).
BY_FREQUENCY: types.MappingProxyType[str | None, tuple[str, tuple[str, ...]]] = types.MappingProxyType(
    {
        "monthly": ("median", ("mapa", "sarima", "ets_seasonal", "holt_winters")),
        "quarterly": ("trimmed", ("theta", "ces", "naive2", "ets_seasonal", "holt_winters")),
        "weekly": ("mean", ("ses", "theta", "sarima")),
        "yearly": (
            "median",
            ("ses", "holt_damped", "theta", "ets_auto", "arima", "theta_optimised", "theta_dynamic"),
        ),
        "other": ("median", ("holt_damped", "ces", "arima")),
    }
)

# Members fitted only for a frequency whose row names them (never in the median of every candidate):
# `forecast-7` measured them on yearly and "other" series only.
LISTED_ONLY = ("theta_optimised", "theta_dynamic")


def key(frequency: str | None, m: int) -> str | None:
    """The row of BY_FREQUENCY for this series: its frequency, `other` without one (and no season)."""
    if frequency is None:
        return "other" if m == 1 else None
    return frequency


def members(frequency: str | None, m: int) -> tuple[str, ...] | None:
    """The members this frequency combines, None when it combines every model-based candidate."""
    row = BY_FREQUENCY.get(key(frequency, m))
    return None if row is None else row[1]


def combination(frequency: str | None, m: int, scores: dict) -> tuple[str, dict[str, float]] | None:
    """(`median`, `trimmed` or `weighted`, equal weights) over this frequency's members that were scored; None
    when the frequency has no row or none of its members was scored (the caller then combines as before)."""
    row = BY_FREQUENCY.get(key(frequency, m))
    if row is None:
        return None
    how, names = row
    got = [k for k in names if k in scores]
    if not got:
        return None
    return ("weighted" if how == "mean" else how), {k: 1.0 / len(got) for k in got}
