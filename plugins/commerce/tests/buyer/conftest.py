"""The buyer side's fixtures: `merchant`, a fresh stand-in ACP merchant (acp_merchant_standin)
with a small catalogue. The shared ACP schema helper (`acp_schemas`, one folder up) is made
importable for these tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent))  # acp_schemas (shared with the seller's tests)

from acp_merchant_standin import Item, Merchant, acp_merchant  # noqa: E402


@pytest.fixture
def merchant() -> Iterator[Merchant]:
    with acp_merchant() as served:
        served.catalogue.update(
            {
                "tee-red-m": Item(
                    "Classic Tee - Red / Medium", 1999, description="A red cotton tee with a relaxed fit."
                ),
                "tee-blue-m": Item("Classic Tee - Blue / Medium", 2199, description="A blue cotton tee."),
                "mug": Item("Enamel Mug", 1500, description="A camping mug, enamel on steel."),
                "boots-3ds": Item(
                    "Leather Boots", 5000, description="Boots whose card needs 3-D Secure.", three_ds=True
                ),
                "lamp-declined": Item("Desk Lamp", 3000, description="A lamp whose card is declined.", decline=True),
                "kettle-gone": Item("Kettle", 2500, description="A kettle nobody has.", out_of_stock=True),
                "scarf-eur": Item("Wool Scarf", 2000, currency="eur", description="A wool scarf priced in euros."),
                "cup-jpy": Item("Tea Cup", 1200, currency="jpy", description="A tea cup priced in yen."),
            }
        )
        yield served
