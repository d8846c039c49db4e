"""The generated input and output types of every tool (`VehicleRecallsInput`, `VehicleRecallsOutput`, …)."""

from ._tools import *  # noqa: F403
