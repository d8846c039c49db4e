"""Fixtures: `lob`, a fresh local stand-in of Lob's API for each test (postal_lob_standin)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from postal_lob_standin import LobStandIn, lob_standin


@pytest.fixture
def lob() -> Iterator[LobStandIn]:
    with lob_standin() as served:
        yield served
