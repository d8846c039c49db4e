"""Reading OFAC's files: one streamed GET answered 200 (on the service's client or a
client of its own), and the path a `file://` URL names."""

from __future__ import annotations

import contextlib
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import httpx


def local_path(url: str) -> Path:
    """The file a `file://` URL names."""
    return Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))


@contextlib.asynccontextmanager
async def streamed(url: str, http: httpx.AsyncClient | None, timeout_s: float) -> AsyncIterator[httpx.Response]:
    """The response to a GET of `url`, its body not yet read; any status but 200 raises ValueError."""
    own = http is None
    client = http or httpx.AsyncClient(follow_redirects=True)
    try:
        async with client.stream("GET", url, timeout=timeout_s) as response:
            if response.status_code != 200:
                raise ValueError(f"{url} answered HTTP {response.status_code}")
            yield response
    finally:
        if own:
            await client.aclose()
