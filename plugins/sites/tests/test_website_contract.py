"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and on PostgreSQL, exactly as every third-party plugin runs it: website_update's
`site_id` travels in its path."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestWebsiteContract(PluginContract):
    plugin = "tollway_sites"
