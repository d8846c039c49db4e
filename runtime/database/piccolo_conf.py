"""The Piccolo configuration module the migration runner names in PICCOLO_CONF.

Piccolo's migration code looks its engine up with `engine_finder()`, which reads
`DB` from this module. `DB` is the engine of the database being migrated by the
current task (a context variable), so two databases migrated in one process,
even at the same time, never see each other's engine.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

MIGRATING_ENGINE: ContextVar[Any] = ContextVar("tollway_migrating_engine", default=None)


def __getattr__(name: str) -> Any:
    if name == "DB":
        return MIGRATING_ENGINE.get()
    raise AttributeError(name)
