"""The kernel's contract suite (`tollway.testing.PluginContract`) run on the compute tool,
on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from goal_support import ENV, goals_kernel

from tollway.testing import PluginContract


class TestGoalsContract(PluginContract):
    plugin = "tollway_goals"
    env = ENV

    @pytest.fixture
    async def contract_kernel(self, kernel_factory: Any) -> Any:
        return await goals_kernel(kernel_factory)  # with the web plugin: its llm provider
