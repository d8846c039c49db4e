"""The kernel's contract suite run on this plugin, on SQLite and on PostgreSQL."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestChemistryContract(PluginContract):
    plugin = "tollway_chemistry"
