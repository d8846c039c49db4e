"""The families the `solve` tool can run, found by importing
`tollway_solve.<problem>` for each problem docs/solve.md names.

A family module that does not exist yet (routing and schedule are built
separately) is simply absent: its `problem` is refused before payment with
`invalid_input` / `unsupported_problem`. A module that exists but fails to
import is a bug and is not hidden.
"""

from __future__ import annotations

import importlib
from typing import Any

PROBLEMS = ("routing", "allocation", "packing", "schedule")

# What a module must define to count as a family (tollway_solve.family.Family).
_REQUIRED = (
    "name",
    "VERSION",
    "block_type",
    "validate",
    "estimate_variables",
    "size",
    "price_units",
    "solve",
    "check",
    "objective",
)


def _load(problem: str) -> Any | None:
    module_name = f"{__package__}.{problem}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    # a family is the module itself (functions at module level) or its `family` object
    candidate = getattr(module, "family", module)
    if not all(hasattr(candidate, attr) for attr in _REQUIRED):
        return None  # a family still being written: not offered yet
    return candidate


FAMILIES: dict[str, Any] = {p: m for p in PROBLEMS if (m := _load(p)) is not None}


def family(problem: str) -> Any | None:
    return FAMILIES.get(problem)
