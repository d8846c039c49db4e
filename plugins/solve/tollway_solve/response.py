"""The `solve` answer (job result): every field is always present, null where
docs/solve.md says."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class CheckOut(msgspec.Struct):
    name: str
    satisfied: bool
    worst_violation: float  # in input units; 0 when satisfied
    detail: str


class ConflictConstraintOut(msgspec.Struct):
    family: str
    ref: str
    label: str


class ConflictOut(msgspec.Struct):
    constraints: list[ConflictConstraintOut]
    explanation: str


class SolveMeta(msgspec.Struct):
    problem: str
    size: dict[str, int]
    variables_estimated: int
    variables_built: int
    solve_time_s: float
    time_limit_s: int
    conflicts_complete: bool
    # what the caller should know about how the answer was reached (e.g. an assumed default);
    # empty when there is nothing to say
    warnings: list[str] = msgspec.field(default_factory=list)


class SolveResponse(msgspec.Struct):
    # The family's model revision and solver release (e.g. "packing-1/ortools-9.15.6755"):
    # Solve results carry a version, as Predict's do.
    version: str
    status: Literal["optimal", "feasible", "infeasible", "timeout"]
    objective_value: float | None
    bound: float | None
    gap: float | None
    solution: dict[str, Any] | None
    checks: list[CheckOut]
    conflicts: list[ConflictOut]
    meta: SolveMeta
