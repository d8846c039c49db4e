"""A list's own publication date: OFAC's CSV files carry none, so it is read from the
head of the list's XML export, whose `publshInformation/Publish_Date` (MM/DD/YYYY,
OFAC's spelling) says when OFAC published it. Only the head is read (the block comes
first); a date that cannot be read is unknown (None), never the time of loading."""

from __future__ import annotations

import asyncio
import datetime as _dt
import re

import httpx

from .download import local_path, streamed

HEAD_BYTES = 64 * 1024  # the block sits in the first few hundred bytes
TIMEOUT_S = 30.0
_BLOCK = re.compile(rb"<(?:\w+:)?publshInformation\b.*?</(?:\w+:)?publshInformation>", re.S)
_DATE = re.compile(rb"<(?:\w+:)?Publish_Date>\s*(\d{1,2})/(\d{1,2})/(\d{4})\s*</(?:\w+:)?Publish_Date>")


def publish_date(head: bytes) -> str | None:
    """`YYYY-MM-DD` from the XML head's `publshInformation/Publish_Date`, or None."""
    block = _BLOCK.search(head)
    found = _DATE.search(block.group(0)) if block else None
    if found is None:
        return None
    month, day, year = (int(g) for g in found.groups())
    try:
        return _dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def _read_local_head(url: str) -> bytes:
    with local_path(url).open("rb") as f:
        return f.read(HEAD_BYTES)


async def _fetch_head(url: str, http: httpx.AsyncClient | None) -> bytes:
    async with streamed(url, http, TIMEOUT_S) as response:
        head = b""
        async for chunk in response.aiter_bytes():  # stop once the block is in: the file is large
            head += chunk
            if _BLOCK.search(head) or len(head) >= HEAD_BYTES:
                break
        return head


def local_publish_date(url: str) -> str | None:
    """The publication date in a `file://` folder's XML export, when the folder has it."""
    try:
        return publish_date(_read_local_head(url))
    except OSError:
        return None


async def fetch_publish_date(url: str, http: httpx.AsyncClient | None) -> str | None:
    """The publication date of the XML export at `url` (a file:// URL is read in place);
    None when it cannot be fetched or carries no readable date."""
    if url.startswith("file://"):
        return await asyncio.to_thread(local_publish_date, url)
    try:
        return publish_date(await _fetch_head(url, http))
    except (httpx.HTTPError, OSError, ValueError):
        return None
