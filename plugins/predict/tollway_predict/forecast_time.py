"""Time axis of a forecast series: parse `t`, find the regular step, place missing
steps, infer the frequency and continue the axis past the end.

Three kinds of axis:
- ``index``: integer `t`; the step is the smallest gap, every gap a multiple of it.
- ``calendar``: ISO dates/date-times that all fall on the same day of the month (or
  all on month ends) at the same time of day, with gaps of whole months; the step is
  counted in months (1 monthly, 3 quarterly, 12 yearly).
- ``fixed``: any other ISO dates/date-times; the step is a fixed duration in seconds
  (3600 hourly, 86400 daily, 604800 weekly).
Pure functions, no I/O.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from functools import reduce
from itertools import pairwise
from math import gcd

from .errors import InputProblem

FREQUENCIES = ("hourly", "daily", "weekly", "monthly", "quarterly", "yearly")
NATURAL_PERIOD = {"hourly": 24, "daily": 7, "weekly": 52, "monthly": 12, "quarterly": 4, "yearly": 1}
_SECONDS = {3600: "hourly", 86400: "daily", 604800: "weekly"}
_MONTHS = {1: "monthly", 3: "quarterly", 12: "yearly"}


@dataclass(frozen=True)
class Axis:
    kind: str  # index | calendar | fixed
    step: int  # index units, months or seconds
    positions: list[int]  # each point's position in steps from the first point
    frequency: str | None  # inferred token or None
    first: object  # first t (int or datetime)
    date_only: bool  # format continued t as YYYY-MM-DD
    month_end: bool  # calendar axis anchored on month ends

    def label(self, k: int) -> int | str:
        """The t of position k (0 = first point)."""
        if self.kind == "index":
            return int(self.first) + k * self.step
        if self.kind == "calendar":
            return _fmt(_add_months(self.first, k * self.step, self.month_end), self.date_only)
        return _fmt(self.first + dt.timedelta(seconds=k * self.step), self.date_only)


def _fmt(value: dt.datetime, date_only: bool) -> str:
    return value.date().isoformat() if date_only else value.isoformat()


def _add_months(start: dt.datetime, months: int, month_end: bool) -> dt.datetime:
    total = start.year * 12 + (start.month - 1) + months
    year, month = divmod(total, 12)
    month += 1
    last = calendar.monthrange(year, month)[1]
    day = last if month_end else min(start.day, last)
    return start.replace(year=year, month=month, day=day)


def _parse(value: object, i: int) -> tuple[dt.datetime, bool]:
    field = f"series[{i}].t"
    if not isinstance(value, str):
        raise InputProblem("invalid_time", "t must be an ISO 8601 date or date-time, or an integer index", field)
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        if len(text) == 10 and "T" not in text and " " not in text:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time()), True
        return dt.datetime.fromisoformat(text), False
    except ValueError:
        raise InputProblem("invalid_time", f"t {value!r} is not an ISO 8601 date or date-time", field) from None


def _regular(offsets: list[int], what: str) -> tuple[int, list[int]]:
    gaps = [b - a for a, b in pairwise(offsets)]
    for i, g in enumerate(gaps):
        if g <= 0:
            raise InputProblem("time_not_increasing", "t must be strictly increasing", f"series[{i + 1}].t")
    step = min(gaps)
    if reduce(gcd, gaps) != step:
        bad = next(i for i, g in enumerate(gaps) if g % step)
        raise InputProblem(
            "irregular_step",
            f"t does not follow a regular step of {step} {what}; the gap before this point is not a multiple of it",
            f"series[{bad + 1}].t",
        )
    return step, [(o - offsets[0]) // step for o in offsets]


def build_axis(ts: list[object]) -> Axis:
    """Parse the t column; raise InputProblem on mixed kinds, bad values, decreasing or
    irregular steps."""
    ints = [isinstance(t, int) and not isinstance(t, bool) for t in ts]
    if all(ints):
        step, pos = _regular([int(t) for t in ts], "index units")
        return Axis("index", step, pos, None, int(ts[0]), False, False)
    if any(ints):
        i = ints.index(not ints[0])
        raise InputProblem("mixed_time_types", "t mixes integer indexes and dates", f"series[{i}].t")
    parsed = [_parse(t, i) for i, t in enumerate(ts)]
    values = [p[0] for p in parsed]
    aware = [v.tzinfo is not None for v in values]
    if any(aware) and not all(aware):
        i = aware.index(not aware[0])
        raise InputProblem("mixed_time_types", "t mixes date-times with and without a time zone", f"series[{i}].t")
    date_only = all(p[1] for p in parsed)
    first = values[0]
    same_clock = all(v.timetz() == first.timetz() for v in values)
    same_day = all(v.day == first.day for v in values)
    month_end = all(v.day == calendar.monthrange(v.year, v.month)[1] for v in values)
    months = [v.year * 12 + v.month - 1 for v in values]
    if same_clock and (same_day or month_end) and len(set(months)) == len(months):
        # guard: a calendar axis must itself be increasing in time
        for i in range(1, len(values)):
            if values[i] <= values[i - 1]:
                raise InputProblem("time_not_increasing", "t must be strictly increasing", f"series[{i}].t")
        step, pos = _regular(months, "months")
        anchored_end = month_end and not (same_day and first.day <= 28)
        return Axis("calendar", step, pos, _MONTHS.get(step), first, date_only, anchored_end)
    secs = [round((v - first).total_seconds()) for v in values]
    step, pos = _regular(secs, "seconds")
    return Axis("fixed", step, pos, _SECONDS.get(step), first, date_only, False)
