"""The operator's figures of money and calls, each one GROUP BY in the database: revenue per
day by category or by payment method, paid calls and their failures per minute, and the
credits agents hold. What the console's overview draws (docs/console.md, through
`Platform.operator_figures`). Both engines answer the same statements but for reading a field
of a receipt's JSON body, which each says its own way. Every statement reading receipts
bounds `created_ms` from below: a range of the index on `tw_receipts.created_ms`. And the
operator's listing of every agent's receipts, filtered, by keyset."""

from __future__ import annotations

import msgspec

from tollway._core.basics.json_values import JSONObject
from tollway._core.basics.money import usdc
from tollway._core.receipts.tables import Receipt
from tollway._core.storage import sql

DAY_MS = 86_400_000
MINUTE_MS = 60_000

# Revenue: receipts of money taken or being taken (receipts.md's statuses `settled` and
# `pending`), not the buying of credits (spending them is the revenue). A goal's `covered`
# calls are paid by the goal's own receipt; `earned` is a seller's income.
BY_CATEGORY = sql.statement(
    "SELECT created_ms / 86400000 AS day, category AS part, SUM(amount) AS total FROM tw_receipts "
    "WHERE created_ms >= {} AND status IN ('settled', 'pending') AND (tool IS NULL OR tool <> 'credits_top_up') "
    "GROUP BY 1, 2"
)
BY_METHOD_SQLITE = sql.statement(
    "SELECT created_ms / 86400000 AS day, json_extract(body, '$.payment_method') AS part, SUM(amount) AS total "
    "FROM tw_receipts "
    "WHERE created_ms >= {} AND status IN ('settled', 'pending') AND (tool IS NULL OR tool <> 'credits_top_up') "
    "GROUP BY 1, 2"
)
BY_METHOD_POSTGRES = sql.statement(
    "SELECT created_ms / 86400000 AS day, body::json ->> 'payment_method' AS part, SUM(amount) AS total "
    "FROM tw_receipts "
    "WHERE created_ms >= {} AND status IN ('settled', 'pending') AND (tool IS NULL OR tool <> 'credits_top_up') "
    "GROUP BY 1, 2"
)
# Paid calls (every paid call leaves a receipt, failed ones too) and those whose tool failed.
CALLS_SQLITE = sql.statement(
    "SELECT created_ms / 60000 AS minute, COUNT(*) AS calls, "
    "SUM(CASE WHEN json_extract(body, '$.execution_status') = 'failed' THEN 1 ELSE 0 END) AS errors "
    "FROM tw_receipts WHERE created_ms >= {} AND tool IS NOT NULL AND tool <> 'credits_top_up' GROUP BY 1"
)
CALLS_POSTGRES = sql.statement(
    "SELECT created_ms / 60000 AS minute, COUNT(*) AS calls, "
    "SUM(CASE WHEN body::json ->> 'execution_status' = 'failed' THEN 1 ELSE 0 END) AS errors "
    "FROM tw_receipts WHERE created_ms >= {} AND tool IS NOT NULL AND tool <> 'credits_top_up' GROUP BY 1"
)
OUTSTANDING = sql.statement("SELECT COALESCE(SUM(credits), 0) AS total FROM tw_agents")


async def revenue(since_ms: int, by: str) -> list[JSONObject]:
    """`{day, part, total}` per day (days since 1970-01-01, UTC) and category or payment method
    (`by`) from `since_ms` on; `total` in micro-USDC."""
    if by == "category":
        statement = BY_CATEGORY
    elif by == "payment_method":
        statement = BY_METHOD_POSTGRES if sql.on_postgres() else BY_METHOD_SQLITE
    else:
        raise ValueError(f"revenue by {by!r}: category or payment_method")
    return [
        {"day": int(r["day"]), "part": str(r["part"] or "unknown"), "total": int(r["total"] or 0)}
        for r in await statement.rows(since_ms)
    ]


async def calls(since_ms: int) -> list[JSONObject]:
    """`{minute, calls, errors}` per minute (since the epoch) with paid calls, from `since_ms` on."""
    statement = CALLS_POSTGRES if sql.on_postgres() else CALLS_SQLITE
    return [
        {"minute": int(r["minute"]), "calls": int(r["calls"]), "errors": int(r["errors"] or 0)}
        for r in await statement.rows(since_ms)
    ]


async def outstanding() -> str:
    """The credits every agent holds together (USDC): what the service owes its agents."""
    row = await OUTSTANDING.row()
    return usdc(int(row["total"]) if row else 0)


async def receipts_page(
    *,
    agent_id: str | None,
    tool: str | None,
    category: str | None,
    since_ms: int | None,
    before: str | None,
    limit: int,
) -> JSONObject:
    """Every agent's receipts, newest first, filtered, one page at a time by keyset: `before`
    is the `next` of the page before (`<created_ms>:<receipt_id>` of its last receipt), so a
    page costs the same however deep it is. `{receipts: [served bodies], next}`."""
    where = Receipt.created_ms >= (since_ms or 0)
    if agent_id:
        where &= Receipt.agent_id == agent_id
    if tool:
        where &= Receipt.tool == tool
    if category:
        where &= Receipt.category == category
    if before:
        at, _, rid = before.partition(":")
        if at.isdigit() and rid:
            # after (at, rid) in (created_ms, receipt_id) DESC order, said so that both engines
            # read the index (created_ms, receipt_id) backwards from `at` with no sort
            where &= (Receipt.created_ms <= int(at)) & ((Receipt.created_ms < int(at)) | (Receipt.receipt_id < rid))
    rows = await (
        Receipt.select(Receipt.receipt_id, Receipt.created_ms, Receipt.body)
        .where(where)
        .order_by(Receipt.created_ms, ascending=False)
        .order_by(Receipt.receipt_id, ascending=False)
        .limit(limit + 1)
    )
    page = rows[:limit]
    more = len(rows) > limit
    return {
        "receipts": [msgspec.json.decode(r["body"]) for r in page],
        "next": f"{page[-1]['created_ms']}:{page[-1]['receipt_id']}" if more else None,
    }
