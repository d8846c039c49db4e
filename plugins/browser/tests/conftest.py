"""This plugin's test run without a PostgreSQL server: the PostgreSQL half of each test is
skipped, saying how to run it, and the SQLite half runs as ever. And the fixtures the
browser tests share: the local test site and a service that lets it through."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from browser_support import Site, serve_site

from tollway.testing import PG_ENV


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(PG_ENV):
        return
    skip = pytest.mark.skip(
        reason=f"no PostgreSQL configured: set {PG_ENV} to an admin URL "
        f"(e.g. {PG_ENV}=postgres://postgres@127.0.0.1:5432/test) to run these tests on it too"
    )
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """The local test site and its forbidden listener, one per test module."""
    yield from serve_site()


@pytest.fixture
async def kernel(kernel_factory, site):
    """The service with this plugin, the test site let through by the allow-list."""
    return await kernel_factory(installed={"tollway_browser"}, env={"TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow})
