"""Snapshots of this plugin's public surface (`tollway.testing.PluginSurface`): browser_task's
OpenAPI operation and schemas, and its MCP listing, on SQLite and PostgreSQL
(`pytest --snapshot-update` to accept a change)."""

from __future__ import annotations

from tollway.testing import PluginSurface


class TestBrowserSurface(PluginSurface):
    plugin = "tollway_browser"
