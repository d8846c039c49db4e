"""A stacked bar chart as plain SVG geometry for the template: one group per day with revenue,
one rectangle per part (category or payment method), each carrying its figures in data-
attributes so a test (or a reader of the page's source) finds the totals without the picture."""

from __future__ import annotations

import dataclasses

from tollway import usdc

from .overview import Day

WIDTH, HEIGHT, TOP, BOTTOM, LEFT = 720, 220, 10, 24, 8
PALETTE = 8  # classes s0..s7 in console.css


@dataclasses.dataclass(frozen=True)
class Bar:
    part: str
    amount: str  # USDC, 6 decimals
    x: float
    y: float
    width: float
    height: float
    shade: int


@dataclasses.dataclass(frozen=True)
class Group:
    date: str
    total: str
    label_x: float
    bars: tuple[Bar, ...]


@dataclasses.dataclass(frozen=True)
class Chart:
    title: str
    width: int
    height: int
    groups: tuple[Group, ...]
    legend: tuple[tuple[str, int], ...]  # (part, shade)
    peak: str  # the tallest day's total, USDC


def stacked(title: str, first_day: int, period_days: int, days: list[Day]) -> Chart:
    parts = sorted({s.part for d in days for s in d.segments})
    shade = {p: i % PALETTE for i, p in enumerate(parts)}
    peak = max((d.total for d in days), default=0)
    slot = (WIDTH - LEFT) / period_days
    plot = HEIGHT - TOP - BOTTOM
    groups = []
    for d in days:
        x = LEFT + (d.day - first_day) * slot + slot * 0.15
        y = HEIGHT - BOTTOM
        bars = []
        for s in d.segments:
            h = plot * s.amount / peak if peak else 0
            y -= h
            bars.append(
                Bar(s.part, usdc(s.amount), round(x, 2), round(y, 2), round(slot * 0.7, 2), round(h, 2), shade[s.part])
            )
        groups.append(Group(d.date, usdc(d.total), round(x + slot * 0.35, 2), tuple(bars)))
    return Chart(title, WIDTH, HEIGHT, tuple(groups), tuple((p, shade[p]) for p in parts), usdc(peak))
