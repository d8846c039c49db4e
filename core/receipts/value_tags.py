"""Value tags on receipts and return on spend: the two kernel routes and their logic."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import msgspec
from piccolo.query.functions.aggregate import Count, Sum

from tollway._core.basics.errors import not_found
from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.money import to_micro, usdc
from tollway._core.plugin_api.query_params import QueryChoice, QueryInt
from tollway._core.plugin_api.routes import Route, RouteCall
from tollway._core.plugin_api.tool import CATEGORIES
from tollway._core.receipts.analytics import CHARGED_STATUSES, DAY_MS, TOP_UP_TOOL
from tollway._core.receipts.tables import Receipt
from tollway._core.wire.receipts import Receipt as ServedReceipt
from tollway._core.wire.value_tags import ReturnOnSpend, ValueTag, ValueTagRequest

TAGS = ("analytics",)
# Pre-filters for the bodies worth decoding: a top-level `value_tag` object or a
# `returned_usdc` (the stored body is msgspec's compact JSON; each decoded body is
# checked again, so a nested key of the same name only costs a decode).
_TAGGED = '%"value_tag":{%'
_RETURNED = '%"returned_usdc":%'


def _job_of(body: ValueTagRequest) -> str:
    """The job id the body names (the route lets exactly one of request_id and job_id through)."""
    return body.request_id if body.request_id is not None else body.job_id


def _same_tag(current: Any, status: str, value: str, note: str | None) -> bool:
    return (
        isinstance(current, dict)
        and current.get("status") == status
        and current.get("value_usdc") == value
        and current.get("note") == note
    )


async def tag_value(call: RouteCall) -> ServedReceipt:
    """Tag the newest receipt of the caller's job: re-signed once per change of tag."""
    body: ValueTagRequest = call.body
    job_id = _job_of(body)
    value = usdc(to_micro(body.value_usdc))  # the pattern admitted it: 0 to 1,000,000, 6 decimals
    book = call.platform.receipts
    async with call.platform.transaction():
        row = (
            await Receipt.select(Receipt.receipt_id)
            .where((Receipt.job_id == job_id) & (Receipt.agent_id == call.agent_id))
            .order_by(Receipt.created_ms, ascending=False)
            .order_by(Receipt.receipt_id, ascending=False)
            .first()
        )
        if row is None:
            raise not_found(f"No receipt of yours belongs to job {job_id}.")
        receipt_id = row["receipt_id"]
        # A write that changes nothing, to hold the receipt's row until the commit: a
        # concurrent identical tag waits here and then finds the tag already set.
        locked = await (
            Receipt.update({Receipt.revision: Receipt.revision})
            .where(Receipt.receipt_id == receipt_id)
            .returning(Receipt.body)
        )
        current = msgspec.json.decode(locked[0]["body"])
        if _same_tag(current.get("value_tag"), body.status, value, body.note):
            return msgspec.convert(current, ServedReceipt)
        tag = ValueTag(status=body.status, value_usdc=value, note=body.note, tagged_at=iso(now_ms()))
        signed = await book.revise(receipt_id, {"value_tag": msgspec.to_builtins(tag)})
    return msgspec.convert(signed, ServedReceipt)


PERIOD = QueryInt("period", "Days (default 30).", default=30, low=1, high=365)
CATEGORY = QueryChoice("category", "Only this category.", tuple(CATEGORIES))


def _ratio(value: int, spend: int) -> float | None:
    if spend <= 0:
        return None
    return float((Decimal(value) / Decimal(spend)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


async def return_on_spend(call: RouteCall) -> ReturnOnSpend:
    """What the caller's charged receipts of the period cost, and the value tagged on them."""
    period, category = PERIOD.read(call.query), CATEGORY.read(call.query)  # checked by the route runner
    # the receipts spend_breakdown counts: money moved or is moving, top-ups excluded
    where = (
        (Receipt.agent_id == call.agent_id)
        & (Receipt.created_ms >= now_ms() - period * DAY_MS)
        & Receipt.status.is_in(list(CHARGED_STATUSES))
        & ((Receipt.tool != TOP_UP_TOOL) | Receipt.tool.is_null())
    )
    if category is not None:
        where &= Receipt.category == category
    totals = await Receipt.select(Sum(Receipt.amount, alias="total"), Count(alias="count")).where(where).first()
    spend, charged = int(totals["total"] or 0), int(totals["count"])
    value = proposed = confirmed = 0
    bodies = await Receipt.select(Receipt.body).where(
        where & (Receipt.body.like(_TAGGED) | Receipt.body.like(_RETURNED))
    )
    for r in bodies:
        receipt = msgspec.json.decode(r["body"])
        if isinstance(receipt.get("returned_usdc"), str):
            spend -= to_micro(receipt["returned_usdc"])
        tag = receipt.get("value_tag")
        if not isinstance(tag, dict):
            continue
        if tag.get("status") == "confirmed":
            value += to_micro(tag["value_usdc"])
            confirmed += 1
        elif tag.get("status") == "proposed":
            proposed += to_micro(tag["value_usdc"])
    return ReturnOnSpend(
        period_days=period,
        category=category,
        spend_usdc=usdc(spend),
        value_usdc=usdc(value),
        proposed_value_usdc=usdc(proposed),
        return_on_spend=_ratio(value, spend),
        receipts_charged=charged,
        receipts_confirmed=confirmed,
    )


ROUTES = (
    Route(
        method="POST",
        path="/v1/analytics/value-tags",
        name="value_tag",
        title="Tag a call's value",
        description="Records what one of your paid calls was worth (request_id or job_id, one of them): status proposed, confirmed "
        "or rejected, and value_usdc. Re-signs the call's newest receipt (revision + 1) and returns it; the same tag "
        "again changes nothing. Only confirmed value counts as return on spend. Free.",
        handle=tag_value,
        auth="write",
        body_type=ValueTagRequest,
        answer_type=ServedReceipt,
        tags=TAGS,
        mcp=True,
        exactly_one_of=(("request_id", "job_id"),),
    ),
    Route(
        method="GET",
        path="/v1/analytics/return-on-spend",
        name="return_on_spend",
        title="Return on spend",
        description="Your spend over a period and the value you confirmed on it: return_on_spend is value / spend "
        "(4 decimals; null when nothing was spent). Free.",
        handle=return_on_spend,
        auth="read",
        answer_type=ReturnOnSpend,
        tags=TAGS,
        mcp=True,
        statuses=(400, 401, 429),
        query=(PERIOD, CATEGORY),
    ),
)
