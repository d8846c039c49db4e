"""The kernel's contract suite (`tollway.testing.PluginContract`) and surface snapshots
(`PluginSurface`) run on the plugin's buyer tools, on SQLite and PostgreSQL. A purchase is
quoted only for a configured merchant and a product its feed lists, with a `psp` provider:
the suite's kernel starts with the stand-in merchant of the tools' example (`acme`, product
`sku124-red-m`) configured and its feed read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acp_merchant_standin import Item, Merchant, acp_merchant
from buyer_support import PspStandin, configure, env_for

from tollway.testing import PluginContract, PluginSurface, http_client


@pytest.fixture
def example_merchant() -> Iterator[Merchant]:
    with acp_merchant() as served:
        served.catalogue["sku124-red-m"] = Item("Classic Tee - Red / Medium", 1999, description="A red cotton tee.")
        yield served


async def _kernel(kernel_factory: Any, merchant: Merchant) -> Any:
    kernel = await kernel_factory(
        installed={"tollway_commerce"}, plugins=[("psp_standin", PspStandin())], env=env_for(merchant)
    )
    async with http_client(kernel) as client:
        await configure(client, merchant, "acme")
    return kernel


class TestCommerceContract(PluginContract):
    plugin = "tollway_commerce"

    @pytest.fixture
    async def contract_kernel(self, kernel_factory: Any, example_merchant: Merchant) -> Any:
        return await _kernel(kernel_factory, example_merchant)


class TestCommerceSurface(PluginSurface):
    plugin = "tollway_commerce"

    @pytest.fixture
    async def surface_kernel(self, kernel_factory: Any, example_merchant: Merchant) -> Any:
        return await _kernel(kernel_factory, example_merchant)
