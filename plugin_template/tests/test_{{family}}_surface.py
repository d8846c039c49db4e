"""Snapshots of this plugin's public surface (`tollway.testing.PluginSurface`): its tools'
OpenAPI operations and the schemas they use, and their MCP listing, on SQLite and
PostgreSQL. The first run writes tests/__snapshots__/ (`--snapshot-update-new-only` in
pyproject.toml); commit it, and any later change to what callers see shows up as a
failing snapshot (`pytest --snapshot-update` rewrites it after a deliberate change).
"""
from __future__ import annotations

from tollway.testing import PluginSurface


class Test{{Family}}Surface(PluginSurface):
    plugin = "tollway_{{family}}"
