"""Fixtures the goals plugin's GitHub tests share: the app's key pair and an HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from github_standin import rsa_keypair


@pytest.fixture(scope="session")
def keys() -> tuple[str, str]:
    """The GitHub App's key pair as (private PEM, public PEM)."""
    return rsa_keypair()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client
