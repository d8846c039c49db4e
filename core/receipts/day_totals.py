"""Revenue of ended UTC days by category and payment method, summed once from the receipts
and kept in `tw_receipt_days`, so the operator's overview over months of receipts reads a few
hundred rows rather than every receipt of the period (docs/console.md, "Ended days").

Exact, not approximate. A day is summed only an hour after it ended (`SETTLE_MS`): by then
every receipt created in it has committed (no statement of the service holds a transaction
that long; on PostgreSQL an idle transaction is ended after `TOLLWAY_DB_DEAD_SESSION_S`).
A receipt revised after its day ended (a late settlement, a refund, a job that finished
after midnight) counts one change in that day's mark, after the receipt's own row changed;
the day's totals are valid only while the mark's `changes` equals the count they were
summed at, so any revision, whenever it commits against a summing, makes the day summed
again at the next read. Summing a day locks its mark first: two summings of one day take
turns, and the second finds the first's totals valid."""

from __future__ import annotations

from tollway._core.basics.ids import now_ms
from tollway._core.basics.json_values import JSONObject
from tollway._core.storage import sql

DAY_MS = 86_400_000
SETTLE_MS = 3_600_000  # a day's totals are summed an hour after it ended, never sooner

# Revenue: money taken or being taken, not the buying of credits (spending them is; figures.py).
SUM_RECEIPTS = sql.statement(
    "SELECT created_ms / 86400000 AS day, category, COALESCE(payment_method, 'unknown') AS payment_method, "
    "SUM(amount) AS total FROM tw_receipts WHERE created_ms >= {} AND created_ms < {} "
    "AND status IN ('settled', 'pending') AND (tool IS NULL OR tool <> 'credits_top_up') GROUP BY 1, 2, 3"
)
CHANGED = sql.statement(
    "INSERT INTO tw_receipt_day_marks (day, changes, summed_at) VALUES ({}, 1, NULL) "
    "ON CONFLICT (day) DO UPDATE SET changes = tw_receipt_day_marks.changes + 1"
)
MARK = sql.statement(
    "INSERT INTO tw_receipt_day_marks (day, changes, summed_at) VALUES ({}, 0, NULL) ON CONFLICT (day) DO NOTHING"
)
LOCK_MARK = sql.statement("SELECT changes, summed_at FROM tw_receipt_day_marks WHERE day = {}", for_update=True)
SUMMED = sql.statement("UPDATE tw_receipt_day_marks SET summed_at = {} WHERE day = {}")
FORGET = sql.statement("DELETE FROM tw_receipt_days WHERE day = {}")
KEEP = sql.statement(
    "INSERT INTO tw_receipt_days (id, day, category, payment_method, total) VALUES ({}, {}, {}, {}, {})"
)
VALID_DAYS = sql.statement("SELECT day FROM tw_receipt_day_marks WHERE day >= {} AND day < {} AND summed_at = changes")
KEPT = sql.statement("SELECT day, category, payment_method, total FROM tw_receipt_days WHERE day >= {} AND day < {}")


def first_open_day(now: int) -> int:
    """The first day whose totals are read from its receipts rather than kept (today, and
    yesterday during the first hour of today)."""
    return (now - SETTLE_MS) // DAY_MS


async def revised(created_ms: int) -> None:
    """A receipt created at `created_ms` was just revised: when its day has ended, that day's
    kept totals are no longer valid (called after the receipt's row changed)."""
    day = created_ms // DAY_MS
    if (day + 1) * DAY_MS <= now_ms():
        await CHANGED.execute(day)


async def sum_day(day: int) -> None:
    """Sum one ended day's revenue from its receipts and keep it, unless a summing that took
    its turn first left it valid."""
    async with sql.transaction():
        await MARK.execute(day)
        mark = await LOCK_MARK.row(day)
        assert mark is not None
        changes = int(mark["changes"])
        if mark["summed_at"] is not None and int(mark["summed_at"]) == changes:
            return
        rows = await SUM_RECEIPTS.rows(day * DAY_MS, (day + 1) * DAY_MS)
        await FORGET.execute(day)
        for r in rows:
            part = f"{day}:{r['category']}:{r['payment_method']}"
            await KEEP.execute(part, day, r["category"], r["payment_method"], int(r["total"] or 0))
        await SUMMED.execute(changes, day)


async def revenue(since_ms: int, now: int | None = None) -> list[JSONObject]:
    """`{day, category, payment_method, total}` (micro-USDC) per day from the day of
    `since_ms` on: ended days from their kept totals (summed first where missing or no
    longer valid), the open days from their receipts."""
    now = now_ms() if now is None else now
    first, open_from = since_ms // DAY_MS, first_open_day(now)
    if first < open_from:
        valid = {int(r["day"]) for r in await VALID_DAYS.rows(first, open_from)}
        for day in range(first, open_from):
            if day not in valid:
                await sum_day(day)
        kept = await KEPT.rows(first, open_from)
    else:
        kept = []
    live = await SUM_RECEIPTS.rows(max(first, open_from) * DAY_MS, (now // DAY_MS + 1) * DAY_MS)
    return [
        {
            "day": int(r["day"]),
            "category": str(r["category"]),
            "payment_method": str(r["payment_method"]),
            "total": int(r["total"] or 0),
        }
        for r in (*kept, *live)
    ]
