"""Hook implementations: declare the `solve` tool."""
from __future__ import annotations

from collections.abc import Callable

from tollway import hookimpl
from tollway import Tool

from .tool import SOLVE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(SOLVE)
