"""The top-level `solve` request: `problem`, `time_limit_s` and one block named
after the problem. Unknown fields are refused.

The block types come from the family modules (see registry.py); a family not
installed yet keeps its block field (as a free object) so that a request naming
it is refused with the specific `unsupported_problem` code rather than as an
unknown field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from .registry import FAMILIES, PROBLEMS

TIME_LIMIT_MIN, TIME_LIMIT_MAX, TIME_LIMIT_DEFAULT = 1, 300, 30

Problem = Literal["routing", "allocation", "packing", "schedule"]


def _block_type(problem: str) -> Any:
    fam = FAMILIES.get(problem)
    return (fam.block_type if fam is not None else dict[str, Any]) | None


TimeLimit = Annotated[
    int, msgspec.Meta(extra_json_schema={"minimum": TIME_LIMIT_MIN, "maximum": TIME_LIMIT_MAX})
]  # bad_time_limit

SolveRequest = msgspec.defstruct(
    "SolveRequest",
    [("problem", Problem), ("time_limit_s", TimeLimit, TIME_LIMIT_DEFAULT)]
    + [(p, _block_type(p), None) for p in PROBLEMS],
    module=__name__,
    forbid_unknown_fields=True,
    kw_only=True,
)
SolveRequest.__doc__ = (
    "A solve request: `problem` (routing, allocation, packing or schedule), `time_limit_s` "
    "(integer 1 to 300, default 30) and the block named after the problem."
)
