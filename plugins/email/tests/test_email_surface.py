"""Snapshots of the email tool's public surface (`tollway.testing.PluginSurface`): its
OpenAPI operation and schemas, and its MCP listing."""

from __future__ import annotations

from test_email_contract import TestEmailContract

from tollway.testing import PluginSurface


class TestEmailSurface(PluginSurface):
    plugin = "tollway_email"
    env = TestEmailContract.env
