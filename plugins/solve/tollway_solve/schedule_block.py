"""The schedule request block (msgspec Structs) and the helpers the family and its
model share: the horizon, job windows, decimal scales and number checks."""

from __future__ import annotations

import math
from typing import Annotated, Literal

import msgspec

from .bounds import BIG, LIST_MAX, Amount, Id, Unit, items, mapping, shown
from .family import InputProblem

MAX_MAGNITUDE = 1e12
TOL = 1e-6


MAX_HORIZON = 10**9  # every job ends within this many time units (bad_magnitude)
# list lengths: jobs * (3 + resources) + precedence + windows stays within the 100,000-variable estimate
MAX_JOBS = 33_333
Time = Annotated[int, shown(minimum=-BIG, maximum=BIG)]  # bad_magnitude


class Window(msgspec.Struct, forbid_unknown_fields=True):
    start: Time
    end: Time


class Resource(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    capacity: Amount = 1
    calendar: items(Window, most=LIST_MAX) | None = None  # type: ignore[valid-type]
    cost_per_unit_time: Amount = 0


class Job(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    duration: Annotated[int, shown(minimum=0, maximum=MAX_HORIZON)]
    release: Time = 0
    due: Time | None = None
    needs: mapping(Amount, most=LIST_MAX) = msgspec.field(default_factory=dict)  # type: ignore[valid-type]
    weight: Amount = 1


class Precedence(msgspec.Struct, forbid_unknown_fields=True):
    before: Id
    after: Id
    lag: Time = 0


class ScheduleBlock(msgspec.Struct, forbid_unknown_fields=True):
    jobs: items(Job, most=MAX_JOBS, least=1)  # type: ignore[valid-type]
    objective: Literal["makespan", "tardiness", "cost"] = "makespan"
    resources: items(Resource, most=LIST_MAX) = msgspec.field(default_factory=list)  # type: ignore[valid-type]
    precedence: items(Precedence, most=LIST_MAX) = msgspec.field(default_factory=list)  # type: ignore[valid-type]
    time_unit: Unit = "minutes"


# ---------------------------------------------------------------- helpers


def _decimals_scale(values: list[float], max_decimals: int, field: str) -> int:
    """Smallest 10**k (k <= max_decimals) making every value integral."""
    for k in range(max_decimals + 1):
        s = 10**k
        if all(abs(v * s - round(v * s)) <= 1e-9 * max(1.0, abs(v * s)) for v in values):
            return s
    raise InputProblem(
        "unsupported_precision",
        f"values in {field} have more than {max_decimals} decimals",
        field,
    )


def _check_number(v: float, field: str, allow_negative: bool = False) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputProblem("bad_magnitude", f"{field} must be a finite number", field)
    if not allow_negative and v < 0:
        raise InputProblem("bad_magnitude", f"{field} must be nonnegative", field)
    if abs(v) > MAX_MAGNITUDE:
        raise InputProblem("bad_magnitude", f"{field} must be at most 1e12 in magnitude", field)


def horizon(block: ScheduleBlock) -> int:
    """An upper bound on the end of any job in some optimal/feasible schedule:
    latest of releases and calendar ends, plus all durations and positive lags."""
    base = max([j.release for j in block.jobs] + [0])
    for r in block.resources:
        for w in r.calendar or []:
            base = max(base, w.end)
    return base + sum(j.duration for j in block.jobs) + sum(max(0, p.lag) for p in block.precedence)


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _job_windows(block: ScheduleBlock, job: Job) -> list[tuple[int, int]] | None:
    """Windows a job must fit into one of (intersection over its calendar resources), or None."""
    res = {r.id: r for r in block.resources}
    wins: list[tuple[int, int]] | None = None
    for rid, amt in job.needs.items():
        r = res[rid]
        if amt > 0 and r.calendar is not None:
            ws = sorted((w.start, w.end) for w in r.calendar)
            wins = ws if wins is None else _intersect(wins, ws)
    return wins
