"""What a data tool declares about its facts for Benchmark: which numeric fields of a
fact's value can be ranked, and which peer fields filter the peer set."""
from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Literal

MAX_PEER_FIELDS = 5  # the peer columns of the fact store (and the most filters a request may give)
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def peer_group(attribute: str, field: str, source: str) -> int:
    """The signed 64-bit number naming one field of one attribute from one source (the
    first eight bytes of the SHA-256 of the three): the key Benchmark's indexes lead with."""
    digest = hashlib.sha256("\x1f".join((attribute, field, source)).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@dataclasses.dataclass(frozen=True)
class Benchmarkable:
    """`fields`: numeric fields at the top level of the tool's fact values (e.g. `total`);
    `peers`: names of the `Fact.peers` entries a request may filter on (e.g. `make`,
    `model_year`), matched case-insensitively; `population`: `looked_up` when the facts
    come from callers' lookups, `complete` when the tool's facts cover its whole source."""

    fields: tuple[str, ...]
    peers: tuple[str, ...] = ()
    population: Literal["looked_up", "complete"] = "looked_up"

    def __post_init__(self) -> None:
        if not self.fields:
            raise ValueError("Benchmarkable needs at least one numeric field")
        if len(self.peers) > MAX_PEER_FIELDS:
            raise ValueError(f"Benchmarkable declares at most {MAX_PEER_FIELDS} peer fields")
        for name in (*self.fields, *self.peers):
            if not _NAME.match(name):
                raise ValueError(f"Benchmarkable field {name!r} must be lower_snake_case")
        if self.population not in ("looked_up", "complete"):
            raise ValueError("population must be looked_up or complete")
