"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and on PostgreSQL. The tool needs no setting to be quoted (it asks the system's
resolver by default), so the suite runs without any."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestVerifyContract(PluginContract):
    plugin = "tollway_verify"
