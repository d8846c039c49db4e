"""The operator's reads that must not grow with the receipts use their indexes, on both
engines (PostgreSQL asked with sequential scans disabled, so it shows the index it can use
on a small table): the pending report's receipts through the partial index of unsettled
receipts, an ended day's totals and the open day's sum through theirs."""

from __future__ import annotations

from tests.support.echo_plugin import EchoPlugin
from tollway._core.credits.pending_report import UNSETTLED_RECEIPTS
from tollway._core.receipts import day_totals
from tollway._core.storage import sql


async def plan(statement: sql.Statement, *args: object) -> str:
    engine = "postgres" if sql.on_postgres() else "sqlite"
    explain = "EXPLAIN " if engine == "postgres" else "EXPLAIN QUERY PLAN "
    async with sql.transaction():
        if engine == "postgres":
            await sql.fetch("SET LOCAL enable_seqscan = off")
        rows = await sql.fetch(explain + statement.template, *args)
    return "\n".join(" ".join(str(v) for v in dict(r).values()) for r in rows)


async def test_the_operators_reads_use_their_indexes(kernel_factory):
    await kernel_factory(plugins=[("echo", EchoPlugin())])
    assert "tw_receipts_unsettled" in await plan(UNSETTLED_RECEIPTS)
    assert "tw_receipt_days_day" in await plan(day_totals.KEPT, 20_000, 20_090)
    assert "tw_receipt_day_marks" in await plan(day_totals.VALID_DAYS, 20_000, 20_090)
    open_day = await plan(day_totals.SUM_RECEIPTS, 0, 86_400_000)  # a range of created_ms, either index
    assert "tw_receipts_created_ms" in open_day or "tw_receipts_newest" in open_day, open_day
