"""Independent checker for schedule solutions: recomputes every check from the block and
the returned solution alone (no model code is shared)."""

from __future__ import annotations

from typing import Any

from .family import Check

TOL = 1e-6


def _c(name: str, worst: float, detail_ok: str, detail_bad: str) -> Check:
    ok = worst <= TOL
    return Check(
        name=name, satisfied=ok, worst_violation=0.0 if ok else float(worst), detail=detail_ok if ok else detail_bad
    )


def objective(block: Any, solution: dict[str, Any]) -> float:
    """The objective value of `solution`: makespan, weighted tardiness or cost."""
    by_job = {s["job"]: s for s in solution["starts"]}
    if block.objective == "makespan":
        return float(max([s["end"] for s in solution["starts"]] + [0]))
    if block.objective == "tardiness":
        total = 0.0
        for j in block.jobs:
            if j.due is not None:
                total += j.weight * max(0, by_job[j.id]["end"] - j.due)
        return total
    rate = {r.id: r.cost_per_unit_time for r in block.resources}
    return float(sum(j.weight * j.duration * sum(a * rate[r] for r, a in j.needs.items()) for j in block.jobs))


def check(block: Any, solution: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    rows = solution.get("starts") or []
    jobs = {j.id: j for j in block.jobs}
    by_job: dict[str, dict] = {}
    bad = []
    worst = 0.0
    for r in rows:
        jid = r.get("job")
        if jid not in jobs or jid in by_job:
            bad.append(f"{jid!r} unknown or repeated")
            worst = max(worst, 1.0)
            continue
        by_job[jid] = r
        d = jobs[jid].duration
        if not isinstance(r.get("start"), int) or not isinstance(r.get("end"), int):
            bad.append(f"{jid}: non-integer times")
            worst = max(worst, 1.0)
        elif r["end"] - r["start"] != d:
            bad.append(f"{jid}: end - start != duration {d}")
            worst = max(worst, abs(r["end"] - r["start"] - d))
    missing = [j for j in jobs if j not in by_job]
    if missing:
        worst = max(worst, 1.0)
        bad.append("missing: " + ", ".join(missing[:5]))
    checks.append(_c("every_job_once", worst, "every job scheduled once with its duration", "; ".join(bad[:5])))
    if missing:
        # the remaining checks need every job; report them as failed too
        for name in (
            "precedence",
            "resource_capacity",
            "calendar_windows",
            "release",
            "tardiness" if block.objective == "tardiness" else "deadlines",
            "objective",
        ):
            checks.append(Check(name, False, 1.0, "cannot check: jobs missing from the solution"))
        return checks

    # precedence
    worst, where = 0.0, ""
    for p in block.precedence:
        v = by_job[p.before]["end"] + p.lag - by_job[p.after]["start"]
        if v > worst:
            worst, where = v, f"{p.after} starts {v} too early after {p.before}"
    checks.append(_c("precedence", worst, f"{len(block.precedence)} precedence constraints hold", where))

    # resource capacity: sweep of [start, end) holdings
    worst, where = 0.0, ""
    for res in block.resources:
        events = []
        for jid, r in by_job.items():
            a = jobs[jid].needs.get(res.id, 0)
            if a > 0 and r["end"] > r["start"]:
                events.append((r["start"], 1, a))
                events.append((r["end"], 0, -a))  # releases sort before acquisitions at equal time
        events.sort(key=lambda e: (e[0], e[1]))
        load = 0.0
        for t, _, a in events:
            load += a
            if load - res.capacity > worst + TOL:
                worst, where = load - res.capacity, f"resource {res.id} holds {load} > {res.capacity} at t={t}"
    checks.append(_c("resource_capacity", worst, "no resource over capacity", where))

    # calendar windows: a job fits one window of every calendar resource it needs
    worst, where = 0.0, ""
    for jid, r in by_job.items():
        for rid, a in jobs[jid].needs.items():
            res = next(x for x in block.resources if x.id == rid)
            if a <= 0 or res.calendar is None:
                continue
            excess = min(
                (max(0, w.start - r["start"]) + max(0, r["end"] - w.end) for w in res.calendar),
                default=float(max(1, r["end"] - r["start"])),
            )
            if excess > worst:
                worst, where = excess, f"job {jid} does not fit a calendar window of {rid}"
    checks.append(_c("calendar_windows", worst, "every job fits one window of its resources' calendars", where))

    # release
    worst, where = 0.0, ""
    for jid, r in by_job.items():
        v = jobs[jid].release - r["start"]
        if v > worst:
            worst, where = v, f"job {jid} starts {v} before its release"
    checks.append(_c("release", worst, "no job starts before its release", where))

    # due: hard deadlines, or reported tardiness under the tardiness objective
    worst, where = 0.0, ""
    for jid, r in by_job.items():
        j = jobs[jid]
        late = max(0, r["end"] - j.due) if j.due is not None else 0
        if block.objective == "tardiness":
            v = abs(r.get("tardiness", -1) - late)
            if v > worst:
                worst, where = v, f"job {jid} reports tardiness {r.get('tardiness')} but is {late} late"
        else:
            v = max(late, abs(r.get("tardiness", -1) - late))
            if v > worst:
                worst, where = v, f"job {jid} ends {late} after its deadline"
    if block.objective == "tardiness":
        checks.append(_c("tardiness", worst, "reported tardiness = max(0, end - due) for every job", where))
    else:
        checks.append(_c("deadlines", worst, "every job with a due time ends by it", where))

    # objective: reported makespan and the recomputed objective
    ms = max([r["end"] for r in by_job.values()] + [0])
    v = abs(solution.get("makespan", float("nan")) - ms) if isinstance(solution.get("makespan"), (int, float)) else 1.0
    checks.append(
        _c(
            "objective",
            v,
            f"makespan {ms} recomputed; objective recomputed from the schedule",
            f"reported makespan {solution.get('makespan')} but jobs end at {ms}",
        )
    )
    return checks
