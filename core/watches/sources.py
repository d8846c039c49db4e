"""What a plugin registers to make an attribute watchable (`register_watch_sources`):
how to read the source's current values of entities, polled by the scheduler."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence

from tollway._core.plugin_api.context import JSONValue, PluginContext

_NAME = re.compile(r"^[a-z][a-z0-9_]{1,62}$")


@dataclasses.dataclass(frozen=True)
class Observed:
    """One entity's current value as the source states it (JSON-able), and the
    source's own date for it."""

    value: JSONValue
    as_of: str | None = None


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What one poll read. `complete` says the snapshot lists every entity the
    source lists, so a key missing from it stopped being listed; a partial
    snapshot (e.g. only the watched entities) says nothing about missing keys."""

    values: Mapping[str, Observed]
    complete: bool


@dataclasses.dataclass(frozen=True)
class WatchSource:
    """A watchable attribute: `attribute` (e.g. `government_solicitations`), the
    `entity_types` a watch on it may name, the `source` named in its Change rows,
    and `poll(context, watched_keys) -> Snapshot`, given the keys watches follow
    now (a source that reads everything may ignore them). `check_key(key)` returns
    why a key cannot name an entity of the source, or None; the refusal reads it after
    the field's name, so it starts with a verb ("must be an OFAC entry number …")."""

    attribute: str
    entity_types: tuple[str, ...]
    source: str
    poll: Callable[[PluginContext, Sequence[str]], Awaitable[Snapshot]]
    check_key: Callable[[str], str | None] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not _NAME.match(self.attribute):
            raise ValueError(f"watch source attribute {self.attribute!r} must be lower_snake_case")
        if not self.entity_types:
            raise ValueError(f"watch source {self.attribute}: name at least one entity type")
