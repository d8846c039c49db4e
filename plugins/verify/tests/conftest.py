"""Fixtures: `zone`, the local DNS server of `verify_dns_zone` (one per test session;
tests that read what it was asked clear `zone.asked` first)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from verify_dns_zone import Zone, dns_zone


@pytest.fixture(scope="session")
def zone() -> Iterator[Zone]:
    with dns_zone() as served:
        yield served


@pytest.fixture
def fresh_zone(zone: Zone) -> Zone:
    """The zone with its record of questions emptied."""
    zone.asked.clear()
    return zone
