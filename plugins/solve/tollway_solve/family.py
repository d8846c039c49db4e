"""What every problem family provides. The tool (tool.py) validates the request,
prices it, runs `solve` in the worker's process pool, then `check` — written
apart from the model, from the input and the returned solution alone — and
refuses to return a solution that fails any check.

Everything here is pure and picklable: no I/O, no kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol

import ortools
from ortools.sat.python import cp_model

Status = Literal["optimal", "feasible", "infeasible", "timeout"]

# The solver every family builds on; answers may change with its release, so each
# family's VERSION ends with it (as predict's simulation VERSION names NumPy's).
ENGINE = f"ortools-{ortools.__version__}"


def status_of(*, proven: bool, found: bool, out_of_time: bool) -> Status:
    """The one status vocabulary of every family.

    `proven`: the search proved its answer (the optimum when `found`, else that nothing
    exists); `found`: a complete solution is in hand; `out_of_time`: the time limit stopped
    the search. A solution without proof is `timeout` when the time ran out, `feasible`
    only when the search ended for another reason (a model too large to build, a method
    that proves no bound and finished on its own)."""
    if proven:
        return "optimal" if found else "infeasible"
    if found and not out_of_time:
        return "feasible"
    return "timeout"


def cpsat_status(code: int, found: bool) -> Status:
    """`status_of` for a CP-SAT result: OPTIMAL and INFEASIBLE are proofs; FEASIBLE and
    UNKNOWN mean the time limit (the only limit the families set) stopped the search."""
    if code == cp_model.MODEL_INVALID:
        raise RuntimeError("the model is invalid")
    proven = code == cp_model.INFEASIBLE or (code == cp_model.OPTIMAL and found)
    return status_of(proven=proven, found=found, out_of_time=not proven)


class InputProblem(Exception):
    """Refused before payment: 400 `invalid_input` with `code`, `message` and the field path."""

    def __init__(self, code: str, message: str, field: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


@dataclasses.dataclass
class Check:
    name: str
    satisfied: bool
    worst_violation: float  # in input units; 0 when satisfied
    detail: str


@dataclasses.dataclass
class ConflictConstraint:
    family: str  # e.g. "capacity", "window", "precedence"
    ref: str  # the input id(s) it concerns
    label: str  # human words


@dataclasses.dataclass
class Conflict:
    constraints: list[ConflictConstraint]
    explanation: str


@dataclasses.dataclass
class Outcome:
    status: Status
    objective_value: float | None
    bound: float | None
    gap: float | None
    solution: dict[str, Any] | None
    conflicts: list[Conflict] = dataclasses.field(default_factory=list)
    variables_built: int = 0
    conflicts_complete: bool = False


class Family(Protocol):
    name: str  # "routing", "allocation", "packing", "schedule"
    # The result's `version`, e.g. "packing-1/ortools-9.15.6755": the family's model
    # revision (bumped whenever a change can alter answers) and the solver's release.
    VERSION: str
    block_type: type  # the msgspec Struct of the request block named after the family

    def validate(self, block: Any) -> None:
        """Raise InputProblem for what the block's types cannot express (ids, windows, cycles...)."""

    def estimate_variables(self, block: Any) -> int:
        """The variable estimate of this family (docs/solve.md)."""

    def size(self, block: Any) -> dict[str, int]:
        """Sizes reported in `meta.size` (e.g. stops, vehicles)."""

    def price_units(self, block: Any) -> int:
        """The pricing size (docs/solve.md): allocation items x options; packing kinds x bins x
        dimensions; otherwise the variable estimate."""

    def solve(self, block: Any, time_limit_s: float) -> Outcome:
        """Build and solve the model within the time limit (runs in a worker process)."""

    def check(self, block: Any, solution: dict[str, Any]) -> list[Check]:
        """Every check docs/solve.md names for the family, recomputed from input and solution."""

    def objective(self, block: Any, solution: dict[str, Any]) -> float:
        """The objective value recomputed from input and solution."""
