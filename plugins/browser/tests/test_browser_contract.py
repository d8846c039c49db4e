"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and on PostgreSQL, exactly as every third-party plugin runs it. The example's unpaid
call is answered 402 before any browser starts."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestBrowserContract(PluginContract):
    plugin = "tollway_browser"
