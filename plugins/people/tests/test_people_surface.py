"""Snapshots of this plugin's public surface (`tollway.testing.PluginSurface`): people
research's OpenAPI operation and schemas and its MCP listing, on SQLite and PostgreSQL
(`pytest --snapshot-update` to accept a change)."""

from __future__ import annotations

from typing import Any

import pytest
from people_standins import PDL_KEY

from tollway.testing import PluginSurface


class TestPeopleSurface(PluginSurface):
    plugin = "tollway_people"
    env = {"TOLLWAY_SEARCH_SEARXNG_URL": "http://127.0.0.1:9", "TOLLWAY_ENRICHMENT_PDL_API_KEY": PDL_KEY}

    @pytest.fixture
    async def surface_kernel(self, kernel_factory: Any) -> Any:
        return await kernel_factory(installed={"tollway_people", "tollway_web", "tollway_enrich"}, env=self.env)
