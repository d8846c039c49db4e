"""Periodic task declaration (run by the runtime's scheduler)."""
from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class PeriodicTask:
    name: str
    interval_s: float
    run: Callable[[Any], Awaitable[None]]  # receives the Kernel
