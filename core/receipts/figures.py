"""The operator's figures of money and calls, each a GROUP BY in the database: revenue per
day by category or by payment method (ended days from their kept totals, day_totals.py),
paid calls and their failures per minute, each tool's p50 and p99 run time, and the credits
agents hold. What the console's overview draws (docs/console.md). Every statement reading
receipts bounds `created_ms` from below: a range of the index on `tw_receipts.created_ms`.
And the operator's listing of every agent's receipts, filtered, by keyset."""

from __future__ import annotations

import msgspec

from tollway._core.basics.json_values import JSONObject
from tollway._core.basics.money import usdc
from tollway._core.receipts import day_totals
from tollway._core.receipts.tables import Receipt
from tollway._core.storage import sql

DAY_MS = 86_400_000
MINUTE_MS = 60_000

# Paid calls (every paid call leaves a receipt, failed ones too) and those whose tool failed.
CALLS = sql.statement(
    "SELECT created_ms / 60000 AS minute, COUNT(*) AS calls, "
    "SUM(CASE WHEN execution_status = 'failed' THEN 1 ELSE 0 END) AS errors "
    "FROM tw_receipts WHERE created_ms >= {} AND tool IS NOT NULL AND tool <> 'credits_top_up' GROUP BY 1"
)
# The run times of each tool's calls, ranked within the tool: the rows at the ranks of the
# median and the 99th percentile (nearest rank) are the tool's p50 and p99.
LATENCY = sql.statement(
    "SELECT tool, n, duration_ms, rank FROM ("
    "SELECT tool, duration_ms, ROW_NUMBER() OVER (PARTITION BY tool ORDER BY duration_ms) AS rank, "
    "COUNT(*) OVER (PARTITION BY tool) AS n FROM tw_receipts "
    "WHERE created_ms >= {} AND duration_ms IS NOT NULL AND tool IS NOT NULL) AS ranked "
    "WHERE rank = (n + 1) / 2 OR rank = (99 * n + 99) / 100 ORDER BY tool, rank"
)
OUTSTANDING = sql.statement("SELECT COALESCE(SUM(credits), 0) AS total FROM tw_agents")


async def revenue(since_ms: int) -> list[JSONObject]:
    """`{day, category, payment_method, total}` per day (days since 1970-01-01, UTC), category
    and payment method from the day of `since_ms` on; `total` in micro-USDC. Ended days come
    from their kept totals (day_totals.py), so a long period costs what a short one does."""
    return await day_totals.revenue(since_ms)


async def calls(since_ms: int) -> list[JSONObject]:
    """`{minute, calls, errors}` per minute (since the epoch) with paid calls, from `since_ms` on."""
    return [
        {"minute": int(r["minute"]), "calls": int(r["calls"]), "errors": int(r["errors"] or 0)}
        for r in await CALLS.rows(since_ms)
    ]


async def latency(since_ms: int) -> list[JSONObject]:
    """`{tool, calls, p50_ms, p99_ms}` per tool whose calls from `since_ms` on have a recorded
    run time (nearest-rank percentiles), by tool name."""
    found: dict[str, JSONObject] = {}
    for r in await LATENCY.rows(since_ms):
        n, rank = int(r["n"]), int(r["rank"])
        tool = found.setdefault(str(r["tool"]), {"tool": str(r["tool"]), "calls": n, "p50_ms": 0, "p99_ms": 0})
        if rank == (n + 1) // 2:
            tool["p50_ms"] = int(r["duration_ms"])
        if rank == (99 * n + 99) // 100:
            tool["p99_ms"] = int(r["duration_ms"])
    return list(found.values())


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
