"""The `solve` tool: one paid job (X-Quote-ID, Idempotency-Key required, 202 then
polling) whose `problem` names a family. Validation and pricing happen before
payment; `run` executes in the worker's process pool, builds and solves the
model, then recomputes every check and the objective with the family's
independent checker. A solution failing any check is never returned: the job
fails with `internal_error` (and is refunded).
"""

from __future__ import annotations

import math
import time
from typing import Any

from tollway import Example, Refusal, Tool, ToolError

from . import registry
from .family import Check, InputProblem, Outcome
from .pricing import price_micro
from .request import TIME_LIMIT_MAX, TIME_LIMIT_MIN, SolveRequest
from .response import (
    CheckOut,
    ConflictConstraintOut,
    ConflictOut,
    SolveMeta,
    SolveResponse,
)

MAX_VARIABLES = 100_000
OBJECTIVE_TOLERANCE = 1e-6  # relative, between the model's objective and the recomputed one


class SolveFailed(ToolError):
    """A failure raised inside the process pool: picklable with all its fields."""

    def __reduce__(self) -> Any:
        return (SolveFailed, (self.code, self.message, self.status))


def refuse(code: str, message: str, field: str) -> Refusal:
    """400 `invalid_input` with the specific `code` beside error and message."""
    return Refusal(
        "invalid_input", f"{field}: {message}", details=[{"field": field, "message": message}], extra={"code": code}
    )


def _family_and_block(value: Any) -> tuple[Any, Any]:
    fam = registry.family(value.problem)
    if fam is None:
        raise InputProblem(
            "unsupported_problem", f"problem {value.problem!r} is not available on this server yet", "problem"
        )
    block = getattr(value, value.problem)
    if block is None:
        raise InputProblem("missing_block", f"problem {value.problem!r} needs a {value.problem!r} block", value.problem)
    return fam, block


def check(value: Any) -> None:
    """Everything refused before payment (the kernel calls it before quoting)."""
    try:
        if not TIME_LIMIT_MIN <= value.time_limit_s <= TIME_LIMIT_MAX:
            raise InputProblem(
                "bad_time_limit",
                f"time_limit_s must be an integer from {TIME_LIMIT_MIN} to {TIME_LIMIT_MAX}",
                "time_limit_s",
            )
        for other in registry.PROBLEMS:
            if other != value.problem and getattr(value, other) is not None:
                raise InputProblem(
                    "unexpected_block", f"a {value.problem!r} problem takes only the {value.problem!r} block", other
                )
        fam, block = _family_and_block(value)
        fam.validate(block)
        estimate = fam.estimate_variables(block)
        if estimate > MAX_VARIABLES:
            raise InputProblem(
                "too_many_variables",
                f"the problem needs about {estimate} variables; at most {MAX_VARIABLES} are accepted",
                value.problem,
            )
    except InputProblem as exc:
        raise refuse(exc.code, exc.message, exc.field) from None


def price(value: Any) -> int:
    fam, block = _family_and_block(value)
    return price_micro(fam.price_units(block), value.time_limit_s)


def _objective_check(claimed: float | None, recomputed: float) -> Check:
    if claimed is None:
        return Check("objective", True, 0.0, f"objective recomputed from the solution: {recomputed:g}")
    diff = abs(claimed - recomputed)
    ok = diff <= OBJECTIVE_TOLERANCE * max(1.0, abs(recomputed))
    return Check("objective", ok, 0.0 if ok else diff, f"solver reported {claimed:g}, recomputed {recomputed:g}")


def _gap(objective: float, bound: float | None) -> float | None:
    if bound is None:
        return None
    return abs(objective - bound) / max(1.0, abs(objective))


def run(value: Any) -> SolveResponse:
    """Runs in the worker's process pool: a plain function of the input."""
    fam, block = _family_and_block(value)
    started = time.monotonic()
    outcome: Outcome = fam.solve(block, float(value.time_limit_s))
    elapsed = time.monotonic() - started
    checks: list[Check] = []
    objective = bound = gap = None
    solution = None
    if outcome.status != "infeasible" and outcome.solution is not None:
        solution = outcome.solution
        checks = list(fam.check(block, solution))
        recomputed = float(fam.objective(block, solution))
        if not any(c.name == "objective" for c in checks):
            checks.append(_objective_check(outcome.objective_value, recomputed))
        failed = [c for c in checks if not c.satisfied]
        if failed:
            names = ", ".join(f"{c.name} ({c.detail})" for c in failed)
            raise SolveFailed(
                "internal_error", f"The solution failed the independent check(s): {names}. Nothing was charged.", 500
            )
        if not all(math.isfinite(x) for x in (recomputed,)):
            raise SolveFailed("internal_error", "The recomputed objective is not finite. Nothing was charged.", 500)
        objective = recomputed
        if outcome.status == "optimal":
            bound, gap = objective, 0.0
        else:
            bound = outcome.bound
            gap = outcome.gap if outcome.gap is not None else _gap(objective, bound)
    status = outcome.status
    if status == "optimal" and solution is None:
        raise SolveFailed(
            "internal_error", "The solver claimed an optimum without a solution. Nothing was charged.", 500
        )
    if status == "feasible" and solution is None:
        status = "timeout"
    return SolveResponse(
        version=fam.VERSION,
        status=status,
        objective_value=objective,
        bound=bound,
        gap=gap,
        solution=solution,
        checks=[CheckOut(c.name, bool(c.satisfied), float(c.worst_violation), c.detail) for c in checks],
        conflicts=[
            ConflictOut([ConflictConstraintOut(k.family, k.ref, k.label) for k in c.constraints], c.explanation)
            for c in outcome.conflicts
        ]
        if status == "infeasible"
        else [],
        meta=SolveMeta(
            problem=value.problem,
            size={k: int(v) for k, v in fam.size(block).items()},
            variables_estimated=int(fam.estimate_variables(block)),
            variables_built=int(outcome.variables_built),
            solve_time_s=round(elapsed, 3),
            time_limit_s=value.time_limit_s,
            conflicts_complete=bool(outcome.conflicts_complete) if status == "infeasible" else False,
            warnings=list(fam.warnings(block)) if hasattr(fam, "warnings") else [],
        ),
    )


EXAMPLES = (
    Example(
        "Bin packing: three kinds of parcel into 10 kg / 40 l crates",
        {
            "problem": "packing",
            "time_limit_s": 10,
            "packing": {
                "variant": "bin",
                "dimensions": ["kg", "litres"],
                "bins": [{"id": "crate", "capacity": {"kg": 10, "litres": 40}, "quantity": 10}],
                "items": [
                    {"id": "books", "size": {"kg": 4, "litres": 6}, "quantity": 3},
                    {"id": "pillows", "size": {"kg": 0.5, "litres": 18}, "quantity": 2},
                    {"id": "lamp", "size": {"kg": 2.5, "litres": 12}, "quantity": 1},
                ],
                "incompatible": [["books", "lamp"]],
            },
        },
    ),
    Example(
        "Allocation: assign two orders to the cheapest warehouses",
        {
            "problem": "allocation",
            "allocation": {
                "objective": "minimise_cost",
                "items": [{"id": "order-1", "quantity": 30}, {"id": "order-2", "quantity": 20}],
                "options": [{"id": "north", "capacity": 40}, {"id": "south", "capacity": 40}],
                "pairs": [
                    {"item": "order-1", "option": "north", "cost": 2},
                    {"item": "order-1", "option": "south", "cost": 3},
                    {"item": "order-2", "option": "north", "cost": 4},
                    {"item": "order-2", "option": "south", "cost": 1},
                ],
            },
        },
    ),
)


def _examples() -> tuple[Example, ...]:
    return tuple(e for e in EXAMPLES if e.input["problem"] in registry.FAMILIES)


SOLVE = Tool(
    name="solve",
    path="/v1/tools/solve",
    title="Solve a routing, allocation, packing or scheduling problem",
    summary="Optimises a routing, allocation, packing or scheduling problem with OR-Tools or PyVRP and returns an independently checked answer.",
    description=(
        "Optimises a routing, allocation, packing or scheduling problem with OR-Tools (routing with PyVRP) within a time "
        "limit and returns an "
        "independently checked answer: status (optimal only with a proof, feasible, infeasible with the clashing "
        "constraints, timeout), objective value, bound, gap, solution, checks and meta. Needs an idempotency key and "
        "runs as a job. Invalid problems are refused before payment with invalid_input and a specific code."
    ),
    category="infrastructure",
    subcategory="solve",
    input_type=SolveRequest,
    output_type=SolveResponse,
    run=run,
    price=price,
    family="solve",
    mode="job",
    cpu_bound=True,
    idempotency="required",
    payment_header="payment-signature",
    rate_limit="paid",
    shape_error="invalid_input",  # docs/solve.md: unknown fields too are invalid_input with a code
    examples=_examples(),
    check=check,
    # the longest time cap plus model building, checking and pool start-up
    time_limit_s=TIME_LIMIT_MAX + 90,
    refund_failed_jobs=True,
)
