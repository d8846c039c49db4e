"""The operator's reads that must not grow with the receipts use their indexes, on both
engines (PostgreSQL asked with sequential scans disabled, so it shows the index it can use
on a small table): the pending report's receipts through the partial index of unsettled
receipts, an ended day's totals and the open day's sum through theirs, the holds still held
through the partial index of them."""

from __future__ import annotations

from tests.support.echo_plugin import EchoPlugin
from tests.support.plans import plan
from tollway._core.credits import holds
from tollway._core.credits.pending_report import UNSETTLED_RECEIPTS
from tollway._core.receipts import day_totals


async def test_the_operators_reads_use_their_indexes(kernel_factory):
    await kernel_factory(plugins=[("echo", EchoPlugin())])
    assert "tw_receipts_unsettled" in await plan(UNSETTLED_RECEIPTS)
    assert "tw_receipt_days_day" in await plan(day_totals.KEPT, 20_000, 20_090)
    assert "tw_receipt_day_marks" in await plan(day_totals.VALID_DAYS, 20_000, 20_090)
    assert "tw_receipts_newest" in await plan(day_totals.SUM_RECEIPTS, 0, 86_400_000)  # a range of created_ms
    # the holds still held (the reconciler's and the pending report's read): the partial index
    assert "tw_credit_holds_held" in await plan(holds._HELD_BEFORE, 1_800_000_000_000)
