"""Ended days' revenue totals (core/receipts/day_totals.py): the same figures as summing every
receipt, read from kept totals once a day has ended an hour ago, summed again after any
revision of one of its receipts (a refund long after), and exact when revisions race the
summing (PostgreSQL, concurrent sessions)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.echo_plugin import EchoPlugin
from tollway._core.receipts import day_totals
from tollway._core.storage import sql
from tollway.testing import credits_session, http_client

DAY_MS = day_totals.DAY_MS
REAL_TIME_NS = time.time_ns
DIRECT = sql.statement(
    "SELECT created_ms / 86400000 AS day, category, payment_method, SUM(amount) AS total FROM tw_receipts "
    "WHERE created_ms >= {} AND status IN ('settled', 'pending') AND (tool IS NULL OR tool <> 'credits_top_up') "
    "GROUP BY 1, 2, 3"
)
MARKS = sql.statement("SELECT day, changes, summed_at FROM tw_receipt_day_marks ORDER BY day")


def at(monkeypatch, ms: int) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: ms * 1_000_000)


def as_set(rows) -> set[tuple[int, str, str, int]]:
    return {(int(r["day"]), r["category"], r["payment_method"], int(r["total"])) for r in rows if int(r["total"])}


async def seed(kernel, monkeypatch, today: int, plan: dict[int, int]) -> tuple[dict[str, str], list[str]]:
    """Paid echo calls (credits, priced 0.001 times 1 to 5 in turn) at noon of each `days ago:
    calls`; their receipt ids."""
    receipts = []
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "5")
        with monkeypatch.context() as m:
            for days_ago, calls in plan.items():
                at(m, (today - days_ago) * DAY_MS + DAY_MS // 2)
                for n in range(calls):
                    paid = await client.post(
                        "/v1/tools/test/echo", json={"text": "x", "repeat": n % 5 + 1}, headers=auth
                    )
                    assert paid.status_code == 200, paid.text
                    receipts.append(paid.json()["data"]["receipt_id"])
    return auth, receipts


async def test_ended_days_are_kept_and_resummed_after_a_late_revision(kernel_factory, monkeypatch):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    today = REAL_TIME_NS() // 1_000_000 // DAY_MS
    _, receipts = await seed(kernel, monkeypatch, today, {5: 2, 2: 3, 1: 1, 0: 2})
    since = (today - 6) * DAY_MS

    # 30 minutes into today: yesterday ended less than an hour ago, so it is read live.
    at(monkeypatch, today * DAY_MS + 30 * 60_000)
    first = await day_totals.revenue(since)
    assert as_set(first) == as_set(await DIRECT.rows(since))
    assert [int(r["day"]) for r in await MARKS.rows()] == [today - 6, today - 5, today - 4, today - 3, today - 2]

    # Two hours in: yesterday is kept too; a second read sums nothing again.
    at(monkeypatch, today * DAY_MS + 2 * 3_600_000)
    assert as_set(await day_totals.revenue(since)) == as_set(await DIRECT.rows(since))
    marks = await MARKS.rows()
    assert [int(r["day"]) for r in marks][-1] == today - 1
    assert all(r["changes"] == 0 and r["summed_at"] == 0 for r in marks)

    # A receipt of five days ago refunded now: that day is marked, then summed again.
    refunded = receipts[1]
    await kernel.refunds.refund_to_credits(refunded, reason="operator")
    changed = {int(r["day"]): (int(r["changes"]), r["summed_at"]) for r in await MARKS.rows()}
    assert changed[today - 5] == (1, 0)
    after = await day_totals.revenue(since)
    assert as_set(after) == as_set(await DIRECT.rows(since))
    five_days_ago = sum(int(r["total"]) for r in after if int(r["day"]) == today - 5)
    assert five_days_ago == 1_000  # the two calls of 0.001 and 0.002, the second refunded
    changed = {int(r["day"]): (int(r["changes"]), r["summed_at"]) for r in await MARKS.rows()}
    assert changed[today - 5] == (1, 1)

    # A revision of today's receipt marks nothing: today is never kept.
    await kernel.refunds.refund_to_credits(receipts[-1], reason="operator")
    assert {int(r["day"]) for r in await MARKS.rows()} == set(range(today - 6, today))
    assert as_set(await day_totals.revenue(since)) == as_set(await DIRECT.rows(since))


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_revisions_racing_the_summing_leave_the_totals_exact(kernel_factory, monkeypatch):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    today = REAL_TIME_NS() // 1_000_000 // DAY_MS
    _, receipts = await seed(kernel, monkeypatch, today, {3: 12, 2: 12})
    since = (today - 3) * DAY_MS
    at(monkeypatch, today * DAY_MS + 2 * 3_600_000)

    async def refund(receipt_id: str) -> None:
        await kernel.refunds.refund_to_credits(receipt_id, reason="operator")

    async def read() -> None:
        for _ in range(4):
            await day_totals.revenue(since)

    # Every other receipt refunded while readers sum the same days over and over.
    await asyncio.gather(*(refund(r) for r in receipts[::2]), *(read() for _ in range(4)))
    assert as_set(await day_totals.revenue(since)) == as_set(await DIRECT.rows(since))
    kept = {int(r["day"]): int(r["total"]) for r in await sql.fetch("SELECT day, total FROM tw_receipt_days")}
    # what is left each day: the calls at odd places, priced 0.001 times 2, 4, 1, 3, 5, 2
    assert kept == {today - 3: 17_000, today - 2: 17_000}
