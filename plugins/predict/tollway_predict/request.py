"""The top-level `predict` request: `model`, `time_limit_s` and the block named
after the model. Unknown fields are refused.

The forecast block type comes from forecast.py; while that module is not
installed the `forecast` field stays (as a free object) so that a request naming
it is refused with the specific `unsupported_model` code rather than as an
unknown field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from .simulation import SimulationBlock

try:  # written separately; the simulation model works without it
    from . import forecast as _forecast
except Exception:  # noqa: BLE001  # pragma: no cover - absent or broken: `model: forecast` is refused as unsupported_model
    _forecast = None  # type: ignore[assignment]

forecast_module: Any = _forecast
ForecastBlock: Any = getattr(_forecast, "ForecastBlock", None) or dict[str, Any]

TIME_LIMIT_MIN, TIME_LIMIT_MAX, TIME_LIMIT_DEFAULT = 1, 120, 20

Model = Literal["simulation", "forecast"]


class PredictRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A predict request: `model` (simulation or forecast), `time_limit_s` (integer 1 to
    120, default 20) and the block named after the model."""

    model: Model
    time_limit_s: Annotated[
        int, msgspec.Meta(extra_json_schema={"minimum": TIME_LIMIT_MIN, "maximum": TIME_LIMIT_MAX})
    ] = TIME_LIMIT_DEFAULT
    simulation: SimulationBlock | None = None
    forecast: ForecastBlock | None = None  # type: ignore[valid-type]
