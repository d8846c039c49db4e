"""The tools the kernel itself provides over the fact store (Changes, Benchmark),
built from the registered data tools once every plugin has declared its own."""
from __future__ import annotations

from collections.abc import Mapping

from ..tool import Tool
from .benchmark import benchmark_tool


def kernel_tools(tools: Mapping[str, Tool]) -> list[Tool]:
    """The history tools, each reading `tools` (the live registry) for what it serves."""
    return [benchmark_tool(tools)]
