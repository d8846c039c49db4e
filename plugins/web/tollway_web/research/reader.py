"""A `Reader` over the web read machinery: the same address rules, fetch and extraction."""

from __future__ import annotations

import asyncio

import httpx

from tollway import iso, now_ms

from .. import extract, fetch
from .model import Page


class WebReader:
    """Reads pages with `fetch.fetch_page` and `extract.extract_page`.

    `allow_private` lets loopback and private hosts through (tests, private
    deployments); left False, such hosts are refused exactly as web_read refuses them.
    """

    def __init__(self, http: httpx.AsyncClient, *, allow_private: bool = False) -> None:
        self._http = http
        self._allow_private = allow_private

    async def read(self, url: str) -> Page:
        page = await fetch.fetch_page(self._http, url, allow_private=self._allow_private, accept=extract.accepts)
        try:
            found = await asyncio.to_thread(extract.extract_page, page.body, page.content_type, page.charset, page.url)
        except ValueError as exc:
            raise fetch.unsupported("The page is binary, not HTML or text.", "binary_body") from exc
        if page.status >= 400:
            raise fetch.unsupported(f"The page answered HTTP {page.status}.", "http_error", upstream_status=page.status)
        if not found.markdown:
            raise fetch.unsupported("The page has no readable text.", "no_text", upstream_status=page.status)
        return Page(url=page.url, title=found.title, markdown=found.markdown, retrieved_at=iso(now_ms()))
