"""The fact store's writes: every completed lookup's declared facts, recorded in the
caller's transaction (the receipt's), a new row only when a value differs from the
last one seen for its series (attribute, entity key, source, owner).

The series head (tw_fact_heads) is a compare-and-set: one conditional upsert decides
whether the value changed, so concurrent lookups of the same entity make one row.
Public facts of a benchmarkable tool also keep their current numbers and peer fields
in tw_fact_numbers, the Benchmark read path (docs/history.md).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from tollway._core.basics.canonical import canonical_bytes
from tollway._core.history.declare import MAX_PEER_FIELDS, Benchmarkable, peer_group
from tollway._core.history.ranks import peer_text
from tollway._core.plugin_api.tool import Fact, Tool
from tollway._core.storage import sql

PUBLIC = ""  # the owner of facts every caller may read
MAX_KEY = 256


_POINT_HEAD = "UPDATE tw_fact_heads SET fact_id = {} WHERE id = {}"
_DROP_NUMBER = "DELETE FROM tw_fact_numbers WHERE attribute = {} AND source = {} AND entity_key = {} AND field = {}"
_ADD_NUMBER = (
    "INSERT INTO tw_fact_numbers (attribute, source, entity_key, field, number, peer_group, peer_1, "
    "peer_2, peer_3, peer_4, peer_5, as_of, updated_ms) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, "
    "{}, {}, {}, {}) ON CONFLICT (attribute, source, entity_key, field) DO UPDATE SET number = "
    "excluded.number, peer_1 = excluded.peer_1, peer_2 = excluded.peer_2, peer_3 = excluded.peer_3, "
    "peer_4 = excluded.peer_4, peer_5 = excluded.peer_5, as_of = excluded.as_of, updated_ms = "
    "excluded.updated_ms"
)


def utc_day(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).strftime("%Y-%m-%d")


def stored_key(entity_key: str) -> str:
    """The entity key as the store keeps it: a key longer than the column is kept as
    `sha256:` + the SHA-256 hex of its text (reads map a key the same way)."""
    if len(entity_key) > MAX_KEY:
        return "sha256:" + hashlib.sha256(entity_key.encode()).hexdigest()
    return entity_key


# Short canonical texts seen lately, with their (text, SHA-256 hex): a lookup's fact mostly
# repeats its series' value (a count), and its text and hash cost more than its encoding.
_HASHED: dict[bytes, tuple[str, str]] = {}
_HASHED_KEPT = 1024
_HASHED_MAX_BYTES = 256  # longer texts are hashed each time (fewer repeat; they would fill it)


def canonical(value: Any) -> tuple[str, str]:
    """(RFC 8785 JSON text, its SHA-256 hex) of a JSON-able value."""
    raw = canonical_bytes(value)
    done = _HASHED.get(raw)
    if done is None:
        done = raw.decode(), hashlib.sha256(raw).hexdigest()
        if len(raw) <= _HASHED_MAX_BYTES:
            if len(_HASHED) >= _HASHED_KEPT:
                _HASHED.clear()
            _HASHED[raw] = done
    return done


@dataclasses.dataclass(frozen=True)
class NewFact:
    """A fact row just written: the value changed (or was first seen, or the entity's
    listing changed)."""

    fact_id: int
    attribute: str
    entity_key: str
    source: str
    owner: str
    listed: bool
    value: Any
    as_of: str | None
    changed_on: str


_HEAD_CAS = (
    "INSERT INTO tw_fact_heads (attribute, entity_key, source, owner, value_hash, listed, fact_id) "
    "VALUES ({}, {}, {}, {}, {}, {}, 0) "
    "ON CONFLICT (attribute, entity_key, source, owner) DO UPDATE "
    "SET value_hash = excluded.value_hash, listed = excluded.listed "
    "WHERE tw_fact_heads.value_hash <> excluded.value_hash OR tw_fact_heads.listed <> excluded.listed "
    "RETURNING id"
)
# The head as it stands: most observations repeat it, and a plain read takes no row lock
# (the CAS below locks the head row until commit, even when nothing changes).
_HEAD_NOW = (
    "SELECT value_hash, listed FROM tw_fact_heads WHERE attribute = {} AND entity_key = {} AND source"
    " = {} AND owner = {}"
)
_INSERT_FACT = (
    "INSERT INTO tw_facts (attribute, entity_key, source, owner, listed, value, value_hash, as_of, first_seen_ms, changed_on, recorded_by) "
    "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}) RETURNING id"
)


async def write(
    *,
    attribute: str,
    entity_key: str,
    source: str,
    owner: str,
    value: Any,
    as_of: str | None,
    now: int,
    recorded_by: str | None,
    listed: bool = True,
) -> NewFact | None:
    """One observation of a series: a new fact row when it differs from the head, else None.
    Run inside the caller's transaction."""
    entity_key = stored_key(entity_key)
    text, digest = canonical(value if listed else None)
    current = await sql.fetch_one(_HEAD_NOW, attribute, entity_key, source, owner)
    if current is not None and current["value_hash"] == digest and bool(current["listed"]) == listed:
        return None  # the value the series already holds: nothing to write, nothing locked
    head = await sql.fetch_one(_HEAD_CAS, attribute, entity_key, source, owner, digest, listed)
    if head is None:
        return None
    day = utc_day(now)
    row = await sql.fetch_one(
        _INSERT_FACT, attribute, entity_key, source, owner, listed, text, digest, as_of, now, day, recorded_by
    )
    fact_id = int(row["id"])
    await sql.fetch(_POINT_HEAD, fact_id, head["id"])
    return NewFact(fact_id, attribute, entity_key, source, owner, listed, value if listed else None, as_of, day)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _peer_text(value: Any) -> str | None:
    return None if value is None else peer_text(value)


async def write_numbers(bench: Benchmarkable, fact: Fact, entity_key: str, now: int, *, listed: bool = True) -> None:
    """Keep the entity's current numbers for Benchmark (public facts only)."""
    value = fact.value if listed and isinstance(fact.value, Mapping) else {}
    peers = [_peer_text(fact.peers.get(name)) for name in bench.peers] + [None] * (MAX_PEER_FIELDS - len(bench.peers))
    for field in bench.fields:
        number = _number(value.get(field))
        if number is None:
            await sql.fetch(
                _DROP_NUMBER,
                fact.attribute,
                fact.source,
                entity_key,
                field,
            )
            continue
        await sql.fetch(
            _ADD_NUMBER,
            fact.attribute,
            fact.source,
            entity_key,
            field,
            number,
            peer_group(fact.attribute, field, fact.source),
            *peers,
            fact.as_of,
            now,
        )


def _owner(fact: Fact, agent_id: str | None) -> str:
    return PUBLIC if fact.public else (agent_id or PUBLIC)


def observed_heads(tool: Tool, value: Any, output: Any, agent_id: str | None) -> list[tuple[str, str, str, str, str]]:
    """The series heads one completed call of `tool` observes, each as (attribute, entity key
    as stored, source, owner, value hash): `record_call` writes nothing when every one of
    them is a listed head holding that hash already."""
    facts = tool.facts(value, output) if tool.facts is not None else ()
    return [(f.attribute, stored_key(f.key), f.source, _owner(f, agent_id), canonical(f.value)[1]) for f in facts]


async def record_call(tool: Tool, value: Any, output: Any, agent_id: str | None, now: int) -> list[NewFact]:
    """Record what one completed call of `tool` states (inside the receipt's transaction)."""
    written: list[NewFact] = []
    for fact in tool.facts(value, output) if tool.facts is not None else ():
        owner = _owner(fact, agent_id)
        new = await write(
            attribute=fact.attribute,
            entity_key=fact.key,
            source=fact.source,
            owner=owner,
            value=fact.value,
            as_of=fact.as_of,
            now=now,
            recorded_by=agent_id,
        )
        if new is None:
            continue
        written.append(new)
        if tool.benchmark is not None and owner == PUBLIC and fact.attribute == tool.name and fact.benchmarked:
            await write_numbers(tool.benchmark, fact, new.entity_key, now)
    return written


def history_tools(tools: Iterable[Tool]) -> dict[str, Tool]:
    """The data tools that keep history (they declare facts), by name."""
    return {t.name: t for t in tools if t.facts is not None}
