"""The `government_solicitations` watch source: the current state of each watched
SAM.gov notice, read with the lookup tool's own request and normalisation, so a
watch change compares the same value the lookup records as a fact.

Each poll asks SAM.gov once per watched notice (`noticeid`), among notices posted in
the 364 days up to today (SAM.gov refuses a window of a year or more): a notice
posted earlier is not found and simply absent from the snapshot, which is partial,
so an absent notice says nothing about whether it is still listed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import msgspec

from tollway import Observed, Snapshot, ToolError, WatchSource

from . import sam
from .notice import NOTICE_ID
from .tool import ATTRIBUTE

log = logging.getLogger("tollway.solicitations")
# Requests in flight at once during a poll.
CONCURRENCY = 4
# Failures that would fail every other request of the poll too: the poll stops.
_FATAL = {"provider_auth", "rate_limited"}


def check_key(key: str) -> str | None:
    """Why `key` cannot name a SAM.gov notice (read after the field's name: "key must be …"), or None."""
    if NOTICE_ID.match(key):
        return None
    return "must be a SAM.gov notice id (noticeId): 32 lower-case hexadecimal characters"


async def poll(services: Any, watched_keys: Sequence[str]) -> Snapshot:
    """The watched notices SAM.gov lists now, each as the lookup's fact value.

    A notice whose request fails is left out (the snapshot is partial) unless the
    failure concerns the whole source (the key refused, rate limiting), or every
    request failed: then the poll fails with that error."""
    keys = sorted({k for k in watched_keys if check_key(k) is None})
    if not keys:
        return Snapshot(values={}, complete=False)
    settings = services.settings("solicitations")
    if sam.SAM.api_key(settings) is None:
        raise sam.not_configured()
    window = sam.notice_window()
    gate = asyncio.Semaphore(CONCURRENCY)
    failures: list[ToolError] = []

    async def one(key: str) -> tuple[str, Any]:
        async with gate:
            if any(f.code in _FATAL for f in failures):  # the rest would fail the same way
                return key, None
            try:
                return key, await sam.fetch_notice(
                    services.http, settings, key, posted_from=window[0], posted_to=window[1]
                )
            except ToolError as exc:
                failures.append(exc)
                log.warning("SAM.gov poll of notice %s failed: %s (%s)", key, exc.code, exc.message)
                return key, None

    found = await asyncio.gather(*(one(k) for k in keys))
    fatal = next((f for f in failures if f.code in _FATAL), None)
    if fatal is not None or (failures and len(failures) == len(keys)):
        raise fatal or failures[-1]
    values = {key: Observed(value=msgspec.to_builtins(n), as_of=n.posted_on) for key, n in found if n is not None}
    return Snapshot(values=values, complete=False)


SOLICITATIONS_WATCH = WatchSource(
    attribute=ATTRIBUTE,
    entity_types=("solicitation",),
    source=sam.SOURCE,
    poll=poll,
    check_key=check_key,
    description="SAM.gov contract opportunities by notice id: any change to a watched notice (deadline, type, set-aside, award, attachments, archiving ...).",
)
