"""The overview's figures, shaped for the page: revenue per day by category and by payment
method, calls and errors per minute over the last hour. Each comes from the kernel's own
GROUP BY over the receipts (`Platform.revenue_per_day`, `calls_per_minute`; docs/console.md),
never from rows loaded here."""

from __future__ import annotations

import dataclasses
import datetime as dt

from tollway import Platform

DAY_MS = 86_400_000
MINUTE_MS = 60_000


@dataclasses.dataclass(frozen=True)
class Segment:
    part: str  # a category or a payment method
    amount: int  # micro-USDC


@dataclasses.dataclass(frozen=True)
class Day:
    day: int  # days since 1970-01-01 (UTC)
    segments: tuple[Segment, ...]

    @property
    def total(self) -> int:
        return sum(s.amount for s in self.segments)

    @property
    def date(self) -> str:
        return (dt.date(1970, 1, 1) + dt.timedelta(days=self.day)).isoformat()


def _days(rows: list, by: str) -> list[Day]:
    """The grouped rows (one per day, category and payment method) as days, each with its
    parts (`by`: "category" or "payment_method") in order."""
    by_day: dict[int, dict[str, int]] = {}
    for r in rows:
        parts = by_day.setdefault(int(r["day"]), {})
        parts[str(r[by])] = parts.get(str(r[by]), 0) + int(r["total"])
    return [Day(d, tuple(Segment(p, a) for p, a in sorted(parts.items()))) for d, parts in sorted(by_day.items())]


async def revenue(platform: Platform, period_days: int, now: int) -> tuple[int, list[Day], list[Day]]:
    """The first day of the period, and its days with revenue, by category and by payment method."""
    first = now // DAY_MS - period_days + 1
    since = first * DAY_MS
    rows = await platform.revenue_per_day(since)
    return first, _days(rows, "category"), _days(rows, "payment_method")


@dataclasses.dataclass(frozen=True)
class Minute:
    minute: int  # minutes since the epoch
    calls: int
    errors: int

    @property
    def time(self) -> str:
        return dt.datetime.fromtimestamp(self.minute * 60, dt.UTC).strftime("%H:%M")


async def activity(platform: Platform, now: int) -> list[Minute]:
    """Each minute of the last hour with paid calls, oldest first."""
    rows = await platform.calls_per_minute((now // MINUTE_MS - 59) * MINUTE_MS)
    return sorted((Minute(int(r["minute"]), int(r["calls"]), int(r["errors"])) for r in rows), key=lambda m: m.minute)
