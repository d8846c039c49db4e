"""The US Treasury sanctions lists as a watchable source (`us_treasury_sanctions`): each
poll reads the lists as currently loaded (a file:// folder is read again; downloaded
lists are the daily refresh's, or newer ones another process left under TOLLWAY_HOME)
and states every entry by its OFAC entry number, so consecutive loads diff into
entries added, removed and changed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec

from tollway import Observed, PluginContext, Snapshot, WatchSource

from . import lists

ATTRIBUTE = "us_treasury_sanctions"


def entry_value(listed_on: lists.ListSpec, parsed) -> dict:
    """What a watch (and the source's history) follows of one entry: its list, whether it
    names an individual, and the entry as screening answers show it."""
    return {"list": listed_on.name, "individual": parsed.is_person, **msgspec.to_builtins(parsed.entry)}


async def poll(context: PluginContext, watched_keys: Sequence[str]) -> Snapshot:
    store = lists.store_of(context)
    url = lists.lists_url_from(context.settings("sanctions"))
    if url.startswith("file://"):  # a local mirror: read it as it is now
        await asyncio.to_thread(store.load_local, url)
    elif store.persisted_newer():  # another process (`tollway data refresh`) downloaded newer lists
        await asyncio.to_thread(store.load_persisted)
    values: dict[str, Observed] = {}
    for one in lists.LISTS:
        loaded = store.lists.get(one.key)
        if loaded is None:
            continue
        for number, parsed in loaded.entries.items():
            values[str(number)] = Observed(entry_value(one, parsed), as_of=loaded.as_of)
    return Snapshot(values=values, complete=all(one.key in store.lists for one in lists.LISTS))


def check_key(key: str) -> str | None:
    """Why `key` cannot name an OFAC entry (read after the field's name: "key must be …"), or None."""
    if not key.isdigit() or len(key) > 9 or int(key) == 0:
        return "must be an OFAC entry number (ent_num) written in decimal digits, e.g. 2676"
    return None


SANCTIONS_WATCH = WatchSource(
    attribute=ATTRIBUTE,
    entity_types=("company", "person", "vessel", "aircraft"),
    source=lists.SOURCE,
    poll=poll,
    check_key=check_key,
    description="Entries of the OFAC SDN and consolidated (non-SDN) lists, by entry number.",
)
