"""A dispatch-rule schedule (serial generation, longest remaining path first) that seeds CP-SAT."""

from __future__ import annotations

import heapq

from .schedule_block import ScheduleBlock

MAX_JOBS = 600  # the rule is quadratic in the jobs: larger blocks go without a hint


def dispatch(block: ScheduleBlock) -> dict[str, int] | None:
    """Start times placing each job, in order of its longest path to the end, at the earliest
    time its predecessors and the resources allow; None when the rule does not apply
    (calendars, negative lags, too many jobs). Deadlines are ignored: the result is a hint."""
    if len(block.jobs) > MAX_JOBS or any(r.calendar is not None for r in block.resources):
        return None
    if any(p.lag < 0 for p in block.precedence):
        return None
    jobs = {j.id: j for j in block.jobs}
    succ: dict[str, list[tuple[str, int]]] = {j: [] for j in jobs}
    preds_left = {j: 0 for j in jobs}
    for p in block.precedence:
        succ[p.before].append((p.after, p.lag))
        preds_left[p.after] += 1
    tail: dict[str, int] = {}  # longest path from the job's start to the end of everything
    order = _topological(jobs, succ, dict(preds_left))
    if order is None:
        return None
    for j in reversed(order):
        tail[j] = jobs[j].duration + max([lag + tail[a] for a, lag in succ[j]] + [0])
    cap = {r.id: r.capacity for r in block.resources}
    placed: dict[str, list[tuple[int, int, float]]] = {r: [] for r in cap}  # (start, end, amount)
    earliest = {j: jobs[j].release for j in jobs}
    ready = [(-tail[j], j) for j in jobs if preds_left[j] == 0]
    heapq.heapify(ready)
    start: dict[str, int] = {}
    while ready:
        _, j = heapq.heappop(ready)
        job = jobs[j]
        needs = {r: a for r, a in job.needs.items() if a > 0 and job.duration > 0}
        t = _first_fit(earliest[j], job.duration, needs, placed, cap)
        start[j] = t
        for r, a in needs.items():
            placed[r].append((t, t + job.duration, a))
        for a, lag in succ[j]:
            earliest[a] = max(earliest[a], t + job.duration + lag)
            preds_left[a] -= 1
            if preds_left[a] == 0:
                heapq.heappush(ready, (-tail[a], a))
    return start


def _topological(jobs: dict, succ: dict[str, list[tuple[str, int]]], left: dict[str, int]) -> list[str] | None:
    out = [j for j in jobs if left[j] == 0]
    i = 0
    while i < len(out):
        for a, _ in succ[out[i]]:
            left[a] -= 1
            if left[a] == 0:
                out.append(a)
        i += 1
    return out if len(out) == len(jobs) else None


def _first_fit(
    t0: int, d: int, needs: dict[str, float], placed: dict[str, list[tuple[int, int, float]]], cap: dict[str, float]
) -> int:
    """The earliest t >= t0 at which every needed resource holds the job over [t, t + d)."""
    candidates = sorted({t0} | {e for r in needs for _, e, _ in placed[r] if e > t0})
    for t in candidates:
        if all(_fits(t, d, a, placed[r], cap[r]) for r, a in needs.items()):
            return t
    return candidates[-1]  # after every placed interval: always free


def _fits(t: int, d: int, amount: float, placed: list[tuple[int, int, float]], cap: float) -> bool:
    overlapping = [(s, e, a) for s, e, a in placed if s < t + d and e > t]
    for point in {t} | {s for s, _, _ in overlapping if s > t}:
        if amount + sum(a for s, e, a in overlapping if s <= point < e) > cap + 1e-9:
            return False
    return True
