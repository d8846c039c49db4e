"""Snapshots of the buying tool's public surface (`tollway.testing.PluginSurface`): its
OpenAPI operation and schemas and its MCP listing."""

from __future__ import annotations

from souls_support import ENV

from tollway.testing import PluginSurface


class TestSoulsSurface(PluginSurface):
    plugin = "tollway_souls"
    env = ENV
