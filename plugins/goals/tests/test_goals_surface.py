"""Snapshots of the compute tool's public surface (`tollway.testing.PluginSurface`): its
OpenAPI operation and schemas, and its MCP listing."""

from __future__ import annotations

from typing import Any

import pytest
from goal_support import ENV, goals_kernel

from tollway.testing import PluginSurface


class TestGoalsSurface(PluginSurface):
    plugin = "tollway_goals"
    env = ENV

    @pytest.fixture
    async def surface_kernel(self, kernel_factory: Any) -> Any:
        return await goals_kernel(kernel_factory)  # with the web plugin: its llm provider
