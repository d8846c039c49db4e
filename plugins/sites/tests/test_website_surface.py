"""Snapshots of this plugin's public surface (`tollway.testing.PluginSurface`): the website
tools' OpenAPI operations and schemas and their MCP listing, on SQLite and PostgreSQL
(`pytest --snapshot-update` to accept a change)."""

from __future__ import annotations

from tollway.testing import PluginSurface


class TestWebsiteSurface(PluginSurface):
    plugin = "tollway_sites"
