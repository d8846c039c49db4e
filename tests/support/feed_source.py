"""A watch source for the delivery tests whose source is a dict the test edits:
`test_feed` lists `FEED` (key -> value) as a complete snapshot, so a key removed
from it stopped being listed."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tollway import Observed, Snapshot, WatchSource, hookimpl

FEED: dict[str, Any] = {}
POLLED: list[list[str]] = []  # the watched keys each poll was given


async def poll(_services: Any, watched_keys: Sequence[str]) -> Snapshot:
    POLLED.append(sorted(watched_keys))
    return Snapshot(values={key: Observed(value, as_of="2026-11-01") for key, value in FEED.items()}, complete=True)


FEED_SOURCE = WatchSource(attribute="test_feed", entity_types=("item",), source="test feed", poll=poll)


class FeedPlugin:
    @hookimpl
    def register_watch_sources(self, register: Callable[[WatchSource], None]) -> None:
        register(FEED_SOURCE)
