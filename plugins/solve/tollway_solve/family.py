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

Status = Literal["optimal", "feasible", "infeasible", "timeout"]

# The solver every family builds on; answers may change with its release, so each
# family's VERSION ends with it (as predict's simulation VERSION names NumPy's).
ENGINE = f"ortools-{ortools.__version__}"


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
