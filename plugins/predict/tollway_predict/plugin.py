"""Hook implementations: declare the `predict` tool."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Tool, hookimpl

from .tool import PREDICT


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(PREDICT)
