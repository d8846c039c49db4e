"""The tools the kernel itself provides over the fact store (Changes, Benchmark),
built from the registered data tools once every plugin has declared its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tollway._core.history.benchmark import benchmark_tool
from tollway._core.history.changes import changes_tool
from tollway._core.plugin_api.tool import Tool


def kernel_tools(tools: Mapping[str, Tool], sources: Mapping[str, Any]) -> list[Tool]:
    """The history tools, each reading `tools` and the watch `sources` (the live
    registries) for what it serves."""
    return [changes_tool(tools, sources), benchmark_tool(tools)]
