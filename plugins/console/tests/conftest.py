"""This plugin's test run without a PostgreSQL server: the PostgreSQL half of each test is
skipped, saying how to run it, and the SQLite half runs as ever."""

from __future__ import annotations

import os

import pytest

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
