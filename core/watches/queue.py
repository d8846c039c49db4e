"""Recording lookups and queueing changes for watches: inside the transaction that recorded a new public
fact of a watched entity (a source poll or a lookup), its Change rows become one
pending delivery per watch following the entity, in order."""

from __future__ import annotations

from typing import Any

import msgspec

from tollway._core.basics.ids import new_id, now_ms
from tollway._core.history.series import FactRow, row_changes
from tollway._core.history.store import NewFact, record_call
from tollway._core.history.tables import FactRecord
from tollway._core.plugin_api.tool import Tool
from tollway._core.watches.tables import Watch, WatchDelivery

ROWS_PER_FACT = 64  # seq = fact id * ROWS_PER_FACT + row index: deliveries keep the facts' order


async def _previous(fact: NewFact) -> Any | None:
    return (
        await FactRecord.select(FactRecord.value, FactRecord.listed)
        .where(
            FactRecord.attribute == fact.attribute,
            FactRecord.entity_key == fact.entity_key,
            FactRecord.owner == fact.owner,
            FactRecord.source == fact.source,
            FactRecord.id < fact.fact_id,
        )
        .order_by(FactRecord.id, ascending=False)
        .first()
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
    watches = await Watch.select(Watch.id).where(
        Watch.attribute == fact.attribute, Watch.entity_key == fact.entity_key, Watch.deleted_ms.is_null()
    )
    if not watches:
        return 0
    if rows is None:
        rows = change_rows(await _previous(fact), fact)
    now = now_ms()
    for watch in watches:
        for i, row in enumerate(rows[:ROWS_PER_FACT]):
            delivery = WatchDelivery(
                id=new_id("wdl"),
                watch_id=watch["id"],
                change_ref=f"{fact.fact_id}:{i}",
                seq=fact.fact_id * ROWS_PER_FACT + i,
                change=msgspec.json.encode(row).decode(),
                state="pending",
                detected_ms=now,
            )
            await WatchDelivery.insert(delivery).on_conflict(
                target=(WatchDelivery.watch_id, WatchDelivery.change_ref), action="DO NOTHING"
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
