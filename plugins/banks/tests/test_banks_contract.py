"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin,
on SQLite and on PostgreSQL."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestBanksContract(PluginContract):
    plugin = "tollway_banks"
