"""Schedule family: validation, model, independent checker, and property tests against brute force."""

from __future__ import annotations

import itertools

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tollway_solve.family import InputProblem
from tollway_solve.schedule import ScheduleBlock, family


def blk(**kw) -> ScheduleBlock:
    return msgspec.convert(kw, ScheduleBlock)


def all_ok(block, out):
    checks = family.check(block, out.solution)
    assert all(c.satisfied for c in checks), [c for c in checks if not c.satisfied]
    names = {c.name for c in checks}
    assert {"precedence", "resource_capacity", "calendar_windows", "release", "objective"} <= names
    assert out.objective_value == pytest.approx(family.objective(block, out.solution))
    return checks


# ------------------------------------------------------------------ validation


def code_of(block) -> str:
    with pytest.raises(InputProblem) as e:
        family.validate(block)
    return e.value.code


def test_validation_codes():
    r = [{"id": "m", "capacity": 1}]
    assert code_of(blk(jobs=[])) == "no_jobs"
    assert code_of(blk(jobs=[{"id": "", "duration": 1}])) == "empty_id"
    assert code_of(blk(jobs=[{"id": "a", "duration": 1}, {"id": "a", "duration": 2}])) == "duplicate_id"
    assert code_of(blk(resources=r + r, jobs=[{"id": "a", "duration": 1}])) == "duplicate_id"
    assert code_of(blk(jobs=[{"id": "a", "duration": 1, "needs": {"x": 1}}])) == "unknown_id"
    assert code_of(blk(jobs=[{"id": "a", "duration": 1}], precedence=[{"before": "a", "after": "b"}])) == "unknown_id"
    assert (
        code_of(blk(jobs=[{"id": "a", "duration": 1}], precedence=[{"before": "a", "after": "a"}]))
        == "precedence_cycle"
    )
    jobs3 = [{"id": x, "duration": 1} for x in "abc"]
    cyc = [{"before": "a", "after": "b"}, {"before": "b", "after": "c"}, {"before": "c", "after": "a"}]
    with pytest.raises(InputProblem) as e:
        family.validate(blk(jobs=jobs3, precedence=cyc))
    assert e.value.code == "precedence_cycle" and "a" in e.value.message
    assert (
        code_of(blk(resources=[{"id": "m", "calendar": [{"start": 5, "end": 2}]}], jobs=[{"id": "a", "duration": 1}]))
        == "reversed_window"
    )
    assert (
        code_of(
            blk(
                resources=[{"id": "m", "calendar": [{"start": 0, "end": 5}, {"start": 4, "end": 9}]}],
                jobs=[{"id": "a", "duration": 1}],
            )
        )
        == "overlapping_windows"
    )
    assert code_of(blk(jobs=[{"id": "a", "duration": -1}])) == "bad_magnitude"
    assert code_of(blk(resources=[{"id": "m", "capacity": 1e13}], jobs=[{"id": "a", "duration": 1}])) == "bad_magnitude"
    assert (
        code_of(blk(resources=[{"id": "m", "capacity": float("inf")}], jobs=[{"id": "a", "duration": 1}]))
        == "bad_magnitude"
    )
    assert (
        code_of(blk(resources=[{"id": "m", "capacity": 1.00001}], jobs=[{"id": "a", "duration": 1}]))
        == "unsupported_precision"
    )
    with pytest.raises(msgspec.ValidationError):
        blk(jobs=[{"id": "a", "duration": 1, "colour": "red"}])  # unknown fields
    with pytest.raises(msgspec.ValidationError):
        blk(jobs=[{"id": "a", "duration": 1.5}])  # durations are integers
    # touching windows are fine
    family.validate(
        blk(
            resources=[{"id": "m", "calendar": [{"start": 0, "end": 5}, {"start": 5, "end": 9}]}],
            jobs=[{"id": "a", "duration": 1, "needs": {"m": 1}}],
        )
    )


def test_estimate_and_size():
    b = blk(
        resources=[{"id": "m", "calendar": [{"start": 0, "end": 10}]}],
        jobs=[{"id": "a", "duration": 2, "needs": {"m": 1}}, {"id": "b", "duration": 3}],
        precedence=[{"before": "a", "after": "b", "lag": 1}],
    )
    # jobs*(3+resources) + precedence + windows + horizon (10 + 5 + 1)
    assert family.estimate_variables(b) == 2 * 4 + 1 + 1 + 16
    assert family.price_units(b) == family.estimate_variables(b)
    assert family.size(b)["jobs"] == 2


# ------------------------------------------------------------------ solving


def test_job_shop_tiny_optimal():
    b = blk(
        resources=[{"id": "m1"}, {"id": "m2"}],
        jobs=[
            {"id": "a1", "duration": 3, "needs": {"m1": 1}},
            {"id": "a2", "duration": 2, "needs": {"m2": 1}},
            {"id": "b1", "duration": 2, "needs": {"m2": 1}},
            {"id": "b2", "duration": 4, "needs": {"m1": 1}},
        ],
        precedence=[{"before": "a1", "after": "a2"}, {"before": "b1", "after": "b2"}],
    )
    family.validate(b)
    out = family.solve(b, 10)
    assert out.status == "optimal" and out.objective_value == 7 and out.gap == 0
    all_ok(b, out)
    assert out.solution["makespan"] == 7
    assert out.variables_built > 0


def test_calendar_lag_release_and_fractional_needs():
    b = blk(
        resources=[{"id": "crew", "capacity": 1.5, "calendar": [{"start": 0, "end": 4}, {"start": 10, "end": 20}]}],
        jobs=[
            {"id": "a", "duration": 3, "needs": {"crew": 1}, "release": 1},
            {"id": "b", "duration": 5, "needs": {"crew": 0.5}},
            {"id": "c", "duration": 2, "needs": {"crew": 1}},
        ],
        precedence=[{"before": "a", "after": "c", "lag": 2}],
    )
    family.validate(b)
    out = family.solve(b, 10)
    assert out.status == "optimal"
    all_ok(b, out)
    s = {r["job"]: r for r in out.solution["starts"]}
    assert s["a"]["start"] == 1 and s["a"]["end"] == 4  # fits the first window
    assert s["c"]["start"] >= 10  # next window, after lag
    assert s["b"]["start"] >= 10  # 5 long: only the second window holds it


def test_tardiness_objective_soft_due():
    b = blk(
        objective="tardiness",
        resources=[{"id": "m"}],
        jobs=[
            {"id": "a", "duration": 4, "due": 4, "weight": 3, "needs": {"m": 1}},
            {"id": "b", "duration": 4, "due": 4, "weight": 1, "needs": {"m": 1}},
        ],
    )
    out = family.solve(b, 10)
    assert out.status == "optimal" and out.objective_value == 4  # b is 4 late, weight 1
    checks = all_ok(b, out)
    assert "tardiness" in {c.name for c in checks}


def test_hard_deadline_infeasible_names_constraints():
    b = blk(
        resources=[{"id": "m"}],
        jobs=[
            {"id": "a", "duration": 4, "due": 4, "needs": {"m": 1}},
            {"id": "b", "duration": 4, "due": 4, "needs": {"m": 1}},
        ],
    )
    out = family.solve(b, 10)
    assert out.status == "infeasible"
    assert out.solution is None and out.objective_value is None and out.bound is None and out.gap is None
    fams = {c.family for cf in out.conflicts for c in cf.constraints}
    assert "capacity" in fams and "deadline" in fams
    assert out.conflicts_complete


def test_need_above_capacity_is_infeasible():
    b = blk(resources=[{"id": "m", "capacity": 2}], jobs=[{"id": "a", "duration": 1, "needs": {"m": 3}}])
    out = family.solve(b, 5)
    assert out.status == "infeasible"
    refs = {c.ref for cf in out.conflicts for c in cf.constraints}
    assert "m" in refs


def test_no_window_fits_is_infeasible():
    b = blk(
        resources=[{"id": "m", "calendar": [{"start": 0, "end": 3}]}],
        jobs=[{"id": "a", "duration": 4, "needs": {"m": 1}}],
    )
    out = family.solve(b, 5)
    assert out.status == "infeasible"
    assert "calendar" in {c.family for cf in out.conflicts for c in cf.constraints}


def test_cost_objective():
    b = blk(
        objective="cost",
        resources=[{"id": "m", "capacity": 2, "cost_per_unit_time": 1.5}],
        jobs=[
            {"id": "a", "duration": 2, "needs": {"m": 1}, "weight": 2},
            {"id": "b", "duration": 3, "needs": {"m": 2}},
        ],
    )
    out = family.solve(b, 5)
    assert out.status == "optimal"
    assert out.objective_value == pytest.approx(2 * 2 * 1.5 + 3 * 2 * 1.5)
    all_ok(b, out)
    assert out.solution["makespan"] == 5


def test_checker_catches_violations():
    b = blk(
        resources=[{"id": "m"}],
        jobs=[
            {"id": "a", "duration": 2, "needs": {"m": 1}, "release": 1},
            {"id": "b", "duration": 2, "needs": {"m": 1}, "due": 3},
        ],
        precedence=[{"before": "a", "after": "b"}],
    )
    sol = {
        "starts": [
            {"job": "a", "start": 0, "end": 2, "resources": {"m": 1}, "tardiness": 0},
            {"job": "b", "start": 1, "end": 3, "resources": {"m": 1}, "tardiness": 0},
        ],
        "makespan": 4,
    }
    bad = {c.name: c for c in family.check(b, sol) if not c.satisfied}
    assert set(bad) == {"precedence", "resource_capacity", "release", "objective"}
    assert bad["precedence"].worst_violation == 1 and bad["release"].worst_violation == 1
    sol["starts"].pop()
    assert not next(c for c in family.check(b, sol) if c.name == "every_job_once").satisfied


# ------------------------------------------------------------------ properties


@st.composite
def small_schedules(draw):
    nres = draw(st.integers(0, 2))
    resources = []
    for r in range(nres):
        res = {"id": f"r{r}", "capacity": draw(st.integers(1, 3))}
        if draw(st.booleans()):
            a = draw(st.integers(0, 3))
            b = a + draw(st.integers(1, 5))
            c = b + draw(st.integers(0, 2))
            res["calendar"] = [{"start": a, "end": b}, {"start": c, "end": c + draw(st.integers(1, 6))}]
        resources.append(res)
    n = draw(st.integers(1, 3))
    objective = draw(st.sampled_from(["makespan", "tardiness", "cost"]))
    jobs = []
    for j in range(n):
        job = {
            "id": f"j{j}",
            "duration": draw(st.integers(0, 3)),
            "release": draw(st.integers(0, 3)),
            "weight": draw(st.integers(0, 3)),
            "needs": {r["id"]: draw(st.integers(0, 3)) for r in resources if draw(st.booleans())},
        }
        if draw(st.booleans()):
            job["due"] = draw(st.integers(0, 8))
        jobs.append(job)
    prec = []
    for a, b in itertools.combinations(range(n), 2):
        if draw(st.integers(0, 2)) == 0:
            prec.append({"before": f"j{a}", "after": f"j{b}", "lag": draw(st.integers(-1, 2))})
    return blk(objective=objective, resources=resources, jobs=jobs, precedence=prec)


def brute_force(b: ScheduleBlock):
    """Best objective over every integer start vector in a generous range (None if none is feasible)."""
    hi = max([j.release for j in b.jobs] + [w.end for r in b.resources for w in (r.calendar or [])] + [0])
    hi += sum(j.duration for j in b.jobs) + sum(max(0, p.lag) for p in b.precedence) + 3
    res = {r.id: r for r in b.resources}
    jobs = b.jobs
    best = None
    ranges = [range(j.release, hi + 1) for j in jobs]
    for starts in itertools.product(*ranges):
        end = {j.id: s + j.duration for j, s in zip(jobs, starts)}
        st_ = {j.id: s for j, s in zip(jobs, starts)}
        if b.objective != "tardiness" and any(j.due is not None and end[j.id] > j.due for j in jobs):
            continue
        if any(st_[p.after] < end[p.before] + p.lag for p in b.precedence):
            continue
        ok = True
        for j in jobs:
            for rid, a in j.needs.items():
                cal = res[rid].calendar
                if a > 0 and cal is not None and not any(w.start <= st_[j.id] and end[j.id] <= w.end for w in cal):
                    ok = False
        if not ok:
            continue
        for rid, r in res.items():
            for t in range(0, hi + 4):
                load = sum(j.needs.get(rid, 0) for j in jobs if st_[j.id] <= t < end[j.id])
                if load > r.capacity:
                    ok = False
                    break
            if not ok:
                break
        if not ok:
            continue
        if b.objective == "makespan":
            v = max(end.values())
        elif b.objective == "tardiness":
            v = sum(j.weight * max(0, end[j.id] - j.due) for j in jobs if j.due is not None)
        else:
            v = 0
        best = v if best is None else min(best, v)
    return best


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_schedules())
def test_property_checked_and_honest(b):
    family.validate(b)
    out = family.solve(b, 5)
    truth = brute_force(b)
    if out.status == "infeasible":
        assert truth is None, "claimed infeasible but a schedule exists"
        assert out.conflicts and out.solution is None
        return
    assert out.status in ("optimal", "feasible")
    assert truth is not None
    all_ok(b, out)
    if out.status == "optimal" and b.objective != "cost":
        assert out.objective_value == pytest.approx(truth)


# ------------------------------------------------------------------ dispatch hint and status


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_dispatch_schedule_passes_the_checker(data):
    from tollway_solve import schedule_hint

    n = data.draw(st.integers(1, 7))
    res = [{"id": "m", "capacity": data.draw(st.sampled_from([1, 2, 3]))}, {"id": "w", "capacity": 2.5}]
    jobs = [
        {
            "id": f"j{i}",
            "duration": data.draw(st.integers(0, 5)),
            "release": data.draw(st.integers(0, 4)),
            "needs": {"m": data.draw(st.integers(0, 1)), "w": data.draw(st.sampled_from([0, 0.5, 1.5, 2.5]))},
        }
        for i in range(n)
    ]
    prec = [
        {"before": f"j{a}", "after": f"j{b}", "lag": data.draw(st.integers(0, 3))}
        for a in range(n)
        for b in range(a + 1, n)
        if data.draw(st.integers(0, 3)) == 0
    ]
    block = blk(resources=res, jobs=jobs, precedence=prec)
    start = schedule_hint.dispatch(block)
    assert start is not None
    rows = [
        {
            "job": j.id,
            "start": start[j.id],
            "end": start[j.id] + j.duration,
            "resources": {r: a for r, a in j.needs.items() if a > 0},
            "tardiness": 0,
        }
        for j in block.jobs
    ]
    checks = family.check(block, {"starts": rows, "makespan": max(r["end"] for r in rows)})
    assert all(c.satisfied for c in checks if c.name != "objective"), [c for c in checks if not c.satisfied]


def test_schedule_without_proof_at_the_time_limit_is_timeout(monkeypatch):
    from ortools.sat.python import cp_model

    from tollway_solve import schedule_model

    real = cp_model.CpSolver.Solve

    def unproven(self, model, *args):  # as if the time limit stopped the search after a solution
        code = real(self, model, *args)
        return cp_model.FEASIBLE if code == cp_model.OPTIMAL else code

    monkeypatch.setattr(cp_model.CpSolver, "Solve", unproven)
    monkeypatch.setattr(cp_model.CpSolver, "BestObjectiveBound", lambda self: 0.0)
    jobs = [{"id": f"j{i}", "duration": 3 + i % 4, "due": 4, "needs": {"m": 1}} for i in range(6)]
    block = blk(resources=[{"id": "m", "capacity": 1}], jobs=jobs, objective="tardiness")
    out = schedule_model.solve(block, 5)
    assert out.status == "timeout" and out.solution is not None  # never "feasible" when the time ran out
    assert out.bound == 0 and out.gap == pytest.approx(1.0) and out.objective_value > 0
