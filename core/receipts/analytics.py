"""Receipts listing and spend breakdown (docs/receipts.md, "Reading and verifying")."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from piccolo.query.functions.aggregate import Count, Sum

from tollway._core import wire
from tollway._core.basics.errors import invalid_request
from tollway._core.basics.ids import now_ms, parse_iso_ms
from tollway._core.basics.money import usdc
from tollway._core.plugin_api.tool import CATEGORIES
from tollway._core.receipts.tables import Receipt

DAY_MS = 86_400_000
CHARGED_STATUSES = ("settled", "pending")
TOP_UP_TOOL = "credits_top_up"  # buying credits is not spending them  # money moved or is moving; refunds and failures cost nothing


def int_param(
    query: Mapping[str, str], name: str, default: int | None, lo: int, hi: int | None, *, clamp: bool = False
) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        try:
            as_float = float(raw)
        except ValueError:
            raise invalid_request(
                f"{name} must be a number.", [{"field": name, "message": "expected a number"}]
            ) from None
        if not as_float.is_integer():
            raise invalid_request(
                f"{name} must be a whole number.", [{"field": name, "message": "expected a whole number"}]
            ) from None
        value = int(as_float)
    if value < lo:
        raise invalid_request(f"{name} must be at least {lo}.", [{"field": name, "message": f"must be at least {lo}"}])
    if hi is not None and value > hi:
        if clamp:
            return hi
        raise invalid_request(f"{name} must be at most {hi}.", [{"field": name, "message": f"must be at most {hi}"}])
    return value


def _time_param(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if not raw:
        return None
    try:
        return parse_iso_ms(raw)
    except ValueError:
        raise invalid_request(
            f"{name} must be an ISO 8601 date or date-time.", [{"field": name, "message": "expected ISO 8601"}]
        ) from None


async def list_receipts(agent_id: str, query: Mapping[str, str]) -> wire.ReceiptPage:
    period = int_param(query, "period", None, 1, 365)
    limit = int_param(query, "limit", 50, 1, 100, clamp=True)
    offset = int_param(query, "offset", 0, 0, None)
    category = query.get("category")
    if category is not None and category not in CATEGORIES:
        raise invalid_request(
            f"category must be one of {', '.join(CATEGORIES)}.", [{"field": "category", "message": "unknown category"}]
        )
    since, until = _time_param(query, "since"), _time_param(query, "until")
    where = Receipt.agent_id == agent_id
    if period is not None:
        where &= Receipt.created_ms >= now_ms() - period * DAY_MS
    if category is not None:
        where &= Receipt.category == category
    if since is not None:
        where &= Receipt.created_ms >= since
    if until is not None:
        where &= Receipt.created_ms <= until
    rows = await (
        Receipt.select(Receipt.body)
        .where(where)
        .order_by(Receipt.created_ms, ascending=False)
        .order_by(Receipt.receipt_id, ascending=False)
        .limit(limit + 1)
        .offset(offset)
    )
    has_more = len(rows) > limit
    receipts = [msgspec.json.decode(r["body"], type=wire.Receipt) for r in rows[:limit]]
    return wire.ReceiptPage(receipts=receipts, count=len(receipts), has_more=has_more)


async def spend_breakdown(agent_id: str, query: Mapping[str, str]) -> wire.SpendBreakdown:
    period = int_param(query, "period", 30, 1, 365)
    assert period is not None
    rows = await (
        Receipt.select(Receipt.category, Sum(Receipt.amount, alias="total"), Count(alias="count"))
        .where(
            (Receipt.agent_id == agent_id)
            & (Receipt.created_ms >= now_ms() - period * DAY_MS)
            & Receipt.status.is_in(list(CHARGED_STATUSES))
            & ((Receipt.tool != TOP_UP_TOOL) | Receipt.tool.is_null())
        )
        .group_by(Receipt.category)
    )
    totals = {r["category"]: (int(r["total"] or 0), int(r["count"])) for r in rows}
    grand = sum(t for t, _ in totals.values())
    categories = [
        wire.CategorySpend(category=c, total=usdc(t), count=n, pct=round(t * 100 / grand, 2) if grand else 0.0)
        for c, (t, n) in sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
    return wire.SpendBreakdown(categories=categories, total=usdc(grand), period_days=period)
