"""A watch source for the watch tests whose source is a dict the test edits: the
attribute `test_feed` over entities of type `item`, keyed `ITEM-<digits>`; `poll`
lists all of `FEED` (item key -> its current value) as a complete snapshot, so a key
removed from it stopped being listed, and notes the watched keys it was given."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tollway import Observed, Snapshot, WatchSource, hookimpl

ATTRIBUTE = "test_feed"
SOURCE = "test feed"
FEED: dict[str, Any] = {}  # item key -> its value now; tests edit it
POLLED: list[list[str]] = []  # the watched keys each poll was given
AS_OF = "2026-11-01"
COMPLETE = [True]  # tests set COMPLETE[0] = False for a source that lists only some entities

_KEY = re.compile(r"^ITEM-[0-9]{1,8}$")


def check_key(key: str) -> str | None:
    return None if _KEY.match(key) else "must look like ITEM-<digits> (e.g. ITEM-42)"


async def poll(services: Any, watched_keys: Sequence[str]) -> Snapshot:
    POLLED.append(sorted(watched_keys))
    return Snapshot(values={k: Observed(v, as_of=AS_OF) for k, v in FEED.items()}, complete=COMPLETE[0])


class FeedPlugin:
    @hookimpl
    def register_watch_sources(self, register: Any) -> None:
        register(
            WatchSource(
                attribute=ATTRIBUTE,
                entity_types=("item",),
                source=SOURCE,
                poll=poll,
                check_key=check_key,
                description="A test feed of items.",
            )
        )
