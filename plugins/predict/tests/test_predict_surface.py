"""Snapshots of this plugin's public surface (`tollway.testing.PluginSurface`): its tools'
OpenAPI operations and the schemas they use, and their MCP listing, on SQLite and
PostgreSQL. A change to what callers see shows here (`pytest --snapshot-update` to accept it)."""

from __future__ import annotations

from tollway.testing import PluginSurface


class TestPredictSurface(PluginSurface):
    plugin = "tollway_predict"
