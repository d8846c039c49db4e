"""Fixtures for the research tests: the local article site and a scripted chat server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from research_support import ChatServer, Site, serve_chat, serve_site


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    yield from serve_site()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    yield from serve_chat()
