"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and PostgreSQL. A purchase is quoted only for a soul and service that exist, so the
suite's kernel starts with the soul its example buys from already registered."""

from __future__ import annotations

from typing import Any

import pytest
from eth_account import Account
from souls_support import ENV, LINGUA, PLUGIN, register

from tollway.testing import PluginContract, http_client


class TestSoulsContract(PluginContract):
    plugin = "tollway_souls"
    env = ENV

    @pytest.fixture
    async def contract_kernel(self, kernel_factory: Any) -> Any:
        kernel = await kernel_factory(installed=PLUGIN, env=ENV)
        async with http_client(kernel) as client:
            assert (await register(client, Account.create(), LINGUA)).status_code == 201
        return kernel
