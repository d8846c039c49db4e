"""Bounds on every field of a predict request, in its JSON schema.

The documented limits (runs, percentiles, variables, outputs, expression length,
discrete values, time cap, series length, horizon, ...; docs/predict.md) are the
models' own checks, which refuse with their specific codes: they are shown in the
schema only (`shown`). Real-valued parameters nothing else limits (a
distribution's mean, a series value, a floor) are kept within +-1e15, where a
float still holds every integer: enforced here by msgspec, refused as
`invalid_input` with code `bad_value` before payment.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

REAL_MAX = 10**15

Real = Annotated[float, msgspec.Meta(ge=-REAL_MAX, le=REAL_MAX)]
NonNegative = Annotated[
    float, msgspec.Meta(le=REAL_MAX, extra_json_schema={"minimum": 0})
]  # the model refuses < 0 with its code


def shown(**schema: Any) -> msgspec.Meta:
    """Bounds the model's check enforces with its own code: in the schema only."""
    return msgspec.Meta(extra_json_schema=schema)
