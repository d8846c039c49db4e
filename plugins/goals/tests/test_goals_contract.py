"""The kernel's contract suite (`tollway.testing.PluginContract`) run on the compute tool,
on SQLite and on PostgreSQL."""
from __future__ import annotations

from goal_support import ENV

from tollway.testing import PluginContract


class TestGoalsContract(PluginContract):
    plugin = "tollway_goals"
    env = ENV
