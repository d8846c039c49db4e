"""Orders: one per purchase, keyed by the buyer's request id (its job). Accepted with the
payment; then fulfilled by the seller (the seller's share credited, the buyer's job
completed with the result), declined by the seller, or expired past its deadline (the
buyer's job failed and refunded). Each ending is one transaction, and an order ends once."""

from __future__ import annotations

from typing import Any

import msgspec

from tollway import AcceptedJob, Platform, PluginContext, Refusal, iso, now_ms, storage, usdc

from .settings import FAMILY, fee_percent, split
from .tables import SoulAgent as Souls
from .tables import SoulOrder as Orders
from .tables import SoulService as Services
from .wire import BuyInput, Order

ORDER_WEBHOOK_KIND = "soul_order"
OPEN = "open"
REFUNDED = "refunded"  # a sale paid outside soul_buy, refunded in full before it was fulfilled
DEFAULT_DEADLINE_S = 86_400  # as `soul_buy`'s default deadline_s


async def accept(context: PluginContext, job: AcceptedJob) -> None:
    """The tool's `on_accept`: the order row and the seller's webhook, in the payment's
    transaction. It must not refuse (the payment is taken): the admitted soul and service exist."""
    value: BuyInput = job.value
    await open_paid_order(
        context.platform,
        order_id=job.request_id,
        soul=value.soul,
        service=value.service,
        buyer_agent_id=job.agent_id,
        receipt_id=job.receipt_id,
        price=job.price,
        request=value.request,
        deadline_s=value.deadline_s,
    )


async def open_paid_order(
    platform: Platform,
    *,
    order_id: str,
    soul: str,
    service: str,
    buyer_agent_id: str,
    receipt_id: str,
    price: int,
    request: Any,
    deadline_s: int = DEFAULT_DEADLINE_S,
) -> int:
    """An open order of the service `soul`/`service` (slugs) for `price` micro-USDC paid by the
    buyer's receipt `receipt_id`, and the seller's webhook, in the caller's transaction; the
    seller's share of the price (TOLLWAY_SOULS_FEE_PERCENT's split). `soul_buy` opens its
    orders with it, and so does a sale paid outside that tool (an ACP checkout paid by card,
    tollway_commerce), which pays the share itself with `Platform.pay_share`: such an order
    has no job waiting on it, and fulfilling it pays no second share (once per receipt)."""
    share, _fee = split(price, fee_percent(dict(platform.settings(FAMILY))))
    found = await Souls.select(Souls.id, Souls.webhook_url, Souls.webhook_secret).where(Souls.slug == soul).first()
    offered = (
        await Services.select(Services.id).where((Services.soul_id == found["id"]) & (Services.slug == service)).first()
    )
    now = now_ms()
    await Orders.insert(
        Orders(
            id=order_id,
            soul_id=found["id"],
            service_id=offered["id"],
            buyer_agent_id=buyer_agent_id,
            receipt_id=receipt_id,
            price=price,
            share=share,
            request=storage.dumps(request),
            state=OPEN,
            result=None,
            note=None,
            deadline_ms=now + deadline_s * 1000,
            created_ms=now,
            updated_ms=now,
        )
    )
    if found["webhook_url"]:
        order = msgspec.to_builtins(await order_out(await get(order_id)))
        await platform.enqueue_webhook(
            webhook_id=f"whk_{order_id}",
            kind=ORDER_WEBHOOK_KIND,
            subject=order_id,
            url=found["webhook_url"],
            secret=found["webhook_secret"],
            body={"type": "soul.order", "delivery_id": f"whk_{order_id}", "order": order},
        )
    return share


# an order with its service's slug and the buyer's payment status (its receipt's, a kernel table)
_ORDERS = (
    "SELECT o.*, s.slug AS service_slug, r.status AS payment_status FROM souls_orders o JOIN souls_services s ON s.id = o.service_id "
    "LEFT JOIN tw_receipts r ON r.receipt_id = o.receipt_id"
)
_ONE = storage.statement(_ORDERS + " WHERE o.id = {}")
# a soul's orders, newest first, of one state or (NULL) of all
_OF_SOUL = storage.statement(
    _ORDERS
    + " WHERE o.soul_id = {} AND o.state = COALESCE({}, o.state) ORDER BY o.created_ms DESC, o.id DESC LIMIT {} OFFSET {}"
)


async def get(order_id: str) -> dict[str, Any] | None:
    return await _ONE.row(order_id)


async def order_out(row: dict[str, Any]) -> Order:
    price, share = int(row["price"]), int(row["share"])
    return Order(
        order_id=row["id"],
        soul_agent_id=row["soul_id"],
        service=row["service_slug"],
        state=row["state"],
        price_usdc=usdc(price),
        seller_share_usdc=usdc(share),
        service_fee=usdc(price - share),
        request=storage.loads(row["request"]),
        result=storage.loads(row["result"]),
        note=row["note"],
        payment_status=row["payment_status"] or "unknown",
        deadline_at=iso(int(row["deadline_ms"])),
        created_at=iso(int(row["created_ms"])),
        updated_at=iso(int(row["updated_ms"])),
    )


async def of_soul(soul_id: str, *, state: str | None, limit: int, offset: int) -> tuple[list[Order], bool]:
    found = await _OF_SOUL.rows(soul_id, state or None, limit + 1, offset)
    return [await order_out(r) for r in found[:limit]], len(found) > limit


async def _close(
    order_id: str, soul_id: str, state: str, *, result: Any = None, note: str | None = None, now: int | None = None
) -> dict[str, Any]:
    """Move an open order of this soul to `state`, or refuse saying why it cannot."""
    now = now or now_ms()
    closed = (
        await Orders.update(
            {
                Orders.state: state,
                Orders.result: storage.dumps(result) if result is not None else None,
                Orders.note: note,
                Orders.updated_ms: now,
            }
        )
        .where(
            (Orders.id == order_id) & (Orders.soul_id == soul_id) & (Orders.state == OPEN) & (Orders.deadline_ms > now)
        )
        .returning(Orders.id)
    )
    if not closed:
        found = await Orders.select(Orders.state).where((Orders.id == order_id) & (Orders.soul_id == soul_id)).first()
        if found is None:
            raise Refusal("not_found", f"No order {order_id!r} for this soul.", status=404)
        said = found["state"] if found["state"] != OPEN else "past its deadline"
        raise Refusal(
            "order_closed",
            f"The order is {said}: it can no longer change.",
            status=409,
            extra={"state": found["state"]},
        )
    return await get(order_id)


async def fulfil(p: Platform, order_id: str, soul: dict[str, Any], result: dict[str, Any]) -> Order:
    """The seller delivers: the order fulfilled, the seller's share credited (with its own
    receipt), the buyer's job completed with the result, all in one transaction."""
    async with storage.transaction():
        row = await _close(order_id, soul["id"], "fulfilled", result=result)
        await p.pay_share(row["receipt_id"], seller_agent_id=soul["agent_id"], share=int(row["share"]))
        await p.finish_job(
            order_id,
            {
                "order_id": order_id,
                "soul": soul["slug"],
                "service": row["service_slug"],
                "result": result,
                "fulfilled_at": iso(int(row["updated_ms"])),
            },
        )
    return await order_out(await get(order_id))


async def refund_paid_order(order_id: str, note: str) -> bool:
    """An order `open_paid_order` opened whose sale was refunded in full outside (tollway_commerce's
    refund route): still open, it ends `refunded` and the seller can no longer fulfil it; in the
    caller's transaction. False when it had ended already (fulfilled before the refund)."""
    now = now_ms()
    closed = (
        await Orders.update({Orders.state: REFUNDED, Orders.note: note, Orders.updated_ms: now})
        .where((Orders.id == order_id) & (Orders.state == OPEN))
        .returning(Orders.id)
    )
    return bool(closed)


UNFULFILLED = ("declined", "expired")  # ended without delivery: the buyer is owed the price


async def order_states(order_ids: list[str]) -> dict[str, dict[str, Any]]:
    """`{state, note}` of each of these orders that exists, by id (`note`: the seller's reason
    when declined). For sales paid outside `soul_buy` (tollway_commerce's ACP card sales), which
    have no job to fail when the seller declines or lets the order expire: their seller learns
    here which ended in UNFULFILLED (to refund), which ended otherwise and which are still open.
    At most 500 ids a call."""
    if not order_ids:
        return {}
    rows = await Orders.select(Orders.id, Orders.state, Orders.note).where(Orders.id.is_in(list(order_ids)[:500]))
    return {r["id"]: {"state": r["state"], "note": r["note"]} for r in rows}


async def decline(platform: Platform, order_id: str, soul: dict[str, Any], reason: str) -> Order:
    """The seller refuses the order: the buyer's job fails and the price is refunded."""
    async with storage.transaction():
        await _close(order_id, soul["id"], "declined", note=reason)
        await platform.fail_job(order_id, "invalid_input", f"The seller declined the order: {reason}")
    return await order_out(await get(order_id))


async def expire_due(platform: Platform, now: int | None = None) -> int:
    """Refund every open order past its deadline (the periodic task); how many ended."""
    now = now or now_ms()
    ended = 0
    due = (
        Orders.select(Orders.id)
        .where((Orders.state == OPEN) & (Orders.deadline_ms <= now))
        .order_by(Orders.deadline_ms)
        .limit(500)
    )
    for row in await due:
        async with storage.transaction():
            closed = (
                await Orders.update({Orders.state: "expired", Orders.updated_ms: now})
                .where((Orders.id == row["id"]) & (Orders.state == OPEN))
                .returning(Orders.id)
            )
            if closed:
                await platform.fail_job(
                    row["id"],
                    "provider_unavailable",
                    "The seller did not fulfil the order before its deadline; the price is refunded.",
                )
                ended += 1
    return ended
