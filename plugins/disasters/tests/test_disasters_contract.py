"""The kernel's contract suite (`core.testing.PluginContract`) run on this plugin,
on SQLite and on PostgreSQL."""
from __future__ import annotations

from core.testing import PluginContract


class TestDisastersContract(PluginContract):
    plugin = "tollway_disasters"
