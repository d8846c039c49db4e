"""Hook implementations: declare the `solve` tool."""
from __future__ import annotations

from collections.abc import Callable

from core.hookspecs import hookimpl
from core.tool import Tool

from .tool import SOLVE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(SOLVE)
