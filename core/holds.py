"""Credit holds: the credits an inline call took before its tool ran.

A hold is written in the debit's transaction and ended in the outcome's
transaction (charged with its receipt, or refunded). Ending is one conditional
UPDATE from `held`, so of the call's own ending and the reconciler's (for a
process that died holding it) exactly one wins.
"""
from __future__ import annotations

from typing import Any

import msgspec

from . import sql
from .ids import now_ms


async def place(
    *, request_id: str, agent_id: str, amount: int, tool: str, receipt_id: str, memo: str | None, decision_context: Any
) -> None:
    context = None if decision_context is None else msgspec.json.encode(decision_context).decode()
    await sql.fetch(
        "INSERT INTO tw_credit_holds (id, agent_id, amount, tool, receipt_id, memo, decision_context, state, created_ms) "
        "VALUES ({}, {}, {}, {}, {}, {}, {}, 'held', {})",
        request_id, agent_id, amount, tool, receipt_id, memo, context, now_ms(),
    )


async def end(request_id: str, state: str) -> bool:
    """Move a hold from `held` to `charged` or `refunded`; False when it had already ended."""
    row = await sql.fetch_one(
        "UPDATE tw_credit_holds SET state = {}, resolved_ms = {} WHERE id = {} AND state = 'held' RETURNING id",
        state, now_ms(), request_id,
    )
    return row is not None


async def held_before(cutoff_ms: int) -> list[dict[str, Any]]:
    """Holds still `held` that were placed before `cutoff_ms` (their process is presumed dead)."""
    rows = await sql.fetch(
        "SELECT id, agent_id, amount, tool, receipt_id, memo, decision_context, created_ms FROM tw_credit_holds "
        "WHERE state = 'held' AND created_ms < {} ORDER BY created_ms",
        cutoff_ms,
    )
    return [dict(r) for r in rows]


def decision_context_of(row: dict[str, Any]) -> Any:
    text = row.get("decision_context")
    return None if text is None else msgspec.json.decode(text)
