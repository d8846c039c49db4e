"""Recording lookups and queueing changes for watches: inside the transaction that recorded a new public
fact of a watched entity (a source poll or a lookup), its Change rows become one
pending delivery per watch following the entity, in order."""

from __future__ import annotations

from typing import Any

import msgspec

from tollway._core.basics.ids import new_id, now_ms
from tollway._core.history.series import FactRow, row_changes
from tollway._core.history.store import NewFact, record_call
from tollway._core.plugin_api.tool import Tool
from tollway._core.storage import sql

ROWS_PER_FACT = 64  # seq = fact id * ROWS_PER_FACT + row index: deliveries keep the facts' order


async def _previous(fact: NewFact) -> Any | None:
    return await sql.fetch_one(
        "SELECT value, listed FROM tw_facts WHERE attribute = {} AND entity_key = {} AND owner = {} AND source = {} AND id < {} "
        "ORDER BY id DESC LIMIT 1",
        fact.attribute,
        fact.entity_key,
        fact.owner,
        fact.source,
        fact.fact_id,
    )


def change_rows(previous: Any | None, fact: NewFact) -> list[dict[str, Any]]:
    """The Change rows of `fact` after `previous` (a tw_facts row of its series, or None:
    a first record is no change), as Changes reports them."""
    if previous is None:
        return []
    before = FactRow(0, bool(previous["listed"]), msgspec.json.decode(previous["value"]), None, "")
    after = FactRow(fact.fact_id, fact.listed, fact.value, fact.as_of, fact.changed_on)
    return [msgspec.to_builtins(row) for row in row_changes(before, after, fact.source)]


async def queue_changes(fact: NewFact, rows: list[dict[str, Any]] | None = None) -> int:
    """Queue `fact`'s Change rows (computed here unless given) for every undeleted watch on
    its entity; returns the number of Change rows (0 when nobody watches it)."""
    if fact.owner != "":
        return 0
    watches = await sql.fetch(
        "SELECT id FROM tw_watches WHERE attribute = {} AND entity_key = {} AND deleted_ms IS NULL",
        fact.attribute,
        fact.entity_key,
    )
    if not watches:
        return 0
    if rows is None:
        rows = change_rows(await _previous(fact), fact)
    now = now_ms()
    for watch in watches:
        for i, row in enumerate(rows[:ROWS_PER_FACT]):
            await sql.fetch(
                "INSERT INTO tw_watch_deliveries (id, watch_id, change_ref, seq, change, state, detected_ms) "
                "VALUES ({}, {}, {}, {}, {}, 'pending', {}) ON CONFLICT (watch_id, change_ref) DO NOTHING",
                new_id("wdl"),
                watch["id"],
                f"{fact.fact_id}:{i}",
                fact.fact_id * ROWS_PER_FACT + i,
                msgspec.json.encode(row).decode(),
                now,
            )
    return len(rows)


async def record_lookup(tool: Tool, value: Any, output: Any, agent_id: str | None, watched: Any) -> None:
    """A completed lookup's facts, in its receipt's transaction (docs/history.md); a change
    of an entity of a watchable attribute (`watched`) is queued for its watches."""
    if tool.facts is None:
        return
    for fact in await record_call(tool, value, output, agent_id, now_ms()):
        if fact.attribute in watched:
            await queue_changes(fact)
