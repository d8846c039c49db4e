"""Credit holds: the credits an inline call took before its tool ran.

A hold is written in the debit's transaction and ended in the outcome's
transaction (charged with its receipt, or refunded). Ending is one conditional
UPDATE from `held`, so of the call's own ending and the reconciler's (for a
process that died holding it) exactly one wins.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tollway._core.basics.ids import now_ms, sorted_id
from tollway._core.credits import ledger
from tollway._core.storage import sql

# Named statements, fixed at import (the paid path: bench/paid_calls.py).
# PostgreSQL: the debit, its `spend` ledger row and the hold as one statement.
_TAKE_PG = (
    "WITH moved AS (UPDATE tw_agents SET credits = credits - {} WHERE id = {} AND credits >= {} RETURNING credits), "
    "spent AS (INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, credits, 'spend', {}, {}, {} FROM moved RETURNING id) "
    "INSERT INTO tw_credit_holds (id, agent_id, amount, tool, receipt_id, memo, decision_context, state, created_ms) "
    "SELECT {}, {}, {}, {}, {}, {}, {}, 'held', {} FROM spent RETURNING id"
)
# SQLite: the hold, after the debit (ledger.debit_credits) in the same transaction.
_PLACE = (
    "INSERT INTO tw_credit_holds (id, agent_id, amount, tool, receipt_id, memo, decision_context, state, created_ms) "
    "VALUES ({}, {}, {}, {}, {}, {}, {}, 'held', {})"
)
# One conditional update from `held`: of the call's own ending and the reconciler's, one wins.
_END = "UPDATE tw_credit_holds SET state = {}, resolved_ms = {} WHERE id = {} AND state = 'held' RETURNING id"
_HELD_BEFORE = (
    "SELECT id, agent_id, amount, tool, receipt_id, memo, decision_context, created_ms FROM tw_credit_holds "
    "WHERE state = 'held' AND created_ms < {} ORDER BY created_ms"
)


async def take(
    db: Any,
    *,
    request_id: str,
    agent_id: str,
    amount: int,
    tool: str,
    receipt_id: str,
    memo: str | None,
    decision_context: Any,
) -> bool:
    """Debit the agent's credits (a `spend` ledger row) and place the hold, together;
    False, with nothing written, when the credits do not cover `amount`.

    On PostgreSQL the three writes are one statement (data-modifying CTEs: one round
    trip, and the balance row is locked only while it runs); SQLite runs them in one
    transaction, in process."""
    context = None if decision_context is None else msgspec.json.encode(decision_context).decode()
    at = now_ms()
    if sql.on_postgres():
        row = await sql.fetch_one(
            _TAKE_PG,
            amount,
            agent_id,
            amount,
            sorted_id("txn"),
            ledger.credits_account(agent_id),
            -amount,
            request_id,
            tool,
            at,
            request_id,
            agent_id,
            amount,
            tool,
            receipt_id,
            memo,
            context,
            at,
        )
        return row is not None
    async with db.transaction():
        if await ledger.debit_credits(agent_id, amount, kind="spend", reference=request_id, memo=tool) is None:
            return False
        await sql.fetch(
            _PLACE,
            request_id,
            agent_id,
            amount,
            tool,
            receipt_id,
            memo,
            context,
            at,
        )
    return True


async def end(request_id: str, state: str) -> bool:
    """Move a hold from `held` to `charged` or `refunded`; False when it had already ended."""
    row = await sql.fetch_one(_END, state, now_ms(), request_id)
    return row is not None


async def held_before(cutoff_ms: int) -> list[dict[str, Any]]:
    """Holds still `held` that were placed before `cutoff_ms` (their process is presumed dead)."""
    rows = await sql.fetch(_HELD_BEFORE, cutoff_ms)
    return [dict(r) for r in rows]


def decision_context_of(row: dict[str, Any]) -> Any:
    text = row.get("decision_context")
    return None if text is None else msgspec.json.decode(text)
