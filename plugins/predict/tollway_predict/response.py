"""The `predict` answer (job result). Every field is always present.

`prediction`, `uncertainty`, `checks` and `meta` have a layout per model,
documented in docs/predict.md (simulation: lists of per-output objects in the
order of `outputs`; forecast: see forecast.py).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class PredictResponse(msgspec.Struct):
    model: Literal["simulation", "forecast"]
    version: str
    status: Literal["complete", "timeout"]
    prediction: Any
    uncertainty: Any
    checks: Any
    meta: Any
