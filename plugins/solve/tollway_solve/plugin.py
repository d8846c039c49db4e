"""Hook implementations: declare the `solve` tool."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Tool, hookimpl

from .tool import SOLVE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(SOLVE)
