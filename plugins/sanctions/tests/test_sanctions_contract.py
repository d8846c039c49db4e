"""The kernel's contract suite on this plugin (SQLite and PostgreSQL), with the
lists read from a file:// folder of the real OFAC files at start-up."""

from __future__ import annotations

from typing import Any

import pytest

from tollway.testing import PluginContract


class TestSanctionsContract(PluginContract):
    plugin = "tollway_sanctions"

    @pytest.fixture
    async def contract_kernel(self, kernel_factory: Any, ofac_folder) -> Any:
        return await kernel_factory(installed={self.plugin}, env={"TOLLWAY_SANCTIONS_LISTS_URL": ofac_folder.as_uri()})
