"""Operator refunds of completed ACP orders, in full or in part (docs/commerce.md, "Refunds").

`POST /v1/tools/internal/commerce/orders/{order_id}/refunds` (operator) with an
`Idempotency-Key` and `{amount?, reason?}`:

1. One transaction, the order row locked: the key's refund answered again when it exists (the
   same request; another one is 422), else the amount (cents; default all that is left) is
   checked against the order's total less every refund not failed, and the refund written
   `pending`. The lock is what keeps concurrent refunds within the total.
2. The PSP refunds that amount of the order's payment with the idempotency key
   `tollway-refund-<refund id>`, so asking again (a retry, the reconciler) never refunds twice.
   A refusal fails the refund (its amount is free again); no answer leaves it pending.
3. One transaction: the kernel takes back what the sale moved, in proportion (credits bought,
   never below a zero balance; a soul seller's share, never below what it withdrew) and issues
   the buyer's `refund` receipt; the refund `succeeded`; the ACP `order_update` event carrying
   the order's refunds enqueued in the webhook outbox, signed as order_create is.
A refund left pending (the process died, the PSP did not answer) is finished by the
reconciler after TOLLWAY_COMMERCE_IN_FLIGHT_S, or by the same request again.

The reconciler also refunds, through the same steps, a soul service whose souls order ended
declined or expired (no job waits on an ACP sale to be failed and refunded): all that is left
of the order, under the order's fixed key AUTO_KEY, so it is made once."""

from __future__ import annotations

import hashlib
import logging
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from tollway import Platform, Refusal, Route, RouteCall, iso, now_ms, storage, usdc

from . import acp, catalogue, sessions
from .acp import AcpError
from .psp import PspError, PspRefused
from .settings import FAMILY, IN_FLIGHT_S, number, public_url
from .tables import AcpToken, CheckoutSession, Order, Refund

log = logging.getLogger("tollway.commerce")

PATH = "/v1/tools/internal/commerce/orders/{order_id}/refunds"
PENDING, SUCCEEDED, FAILED = "pending", "succeeded", "failed"
LIVE = (PENDING, SUCCEEDED)  # refunds that count against the order's total
# the key of the reconciler's refund of a soul service whose souls order ended undelivered, one
# per order; no operator's Idempotency-Key can be it (a header cannot carry NUL)
AUTO_KEY = "\x00soul-order-ended"
OPEN = "open"  # a souls order still to be fulfilled (tollway_souls.orders.OPEN)
ENDED = {  # souls order states ended undelivered (tollway_souls.orders.UNFULFILLED): the refund's reason
    "declined": "the seller declined the order",
    "expired": "the seller did not fulfil the order before its deadline",
}
PAGE = 500  # soul service orders asked of the souls plugin at a time (its limit a call)


class RefundRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A refund of a completed order."""

    amount: Annotated[int, Meta(gt=0)] | None = None  # cents; left out: all that is left
    reason: Annotated[str, Meta(max_length=500)] = ""


class RefundView(msgspec.Struct, kw_only=True):
    refund_id: str
    order_id: str
    checkout_session_id: str
    status: str  # pending, succeeded, failed
    amount: int  # cents
    currency: str
    reason: str
    psp_refund_id: str | None
    receipt_id: str | None  # the buyer's refund receipt
    credits_taken_back_usdc: str  # credits the order bought, taken back from the buyer
    share_taken_back_usdc: str  # the soul seller's share taken back
    refunded_total: int  # cents refunded of the order so far (succeeded)
    order_total: int  # cents
    error: str | None
    created_at: str


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


async def _view(refund_id: str) -> RefundView:
    row = await Refund.select().where(Refund.id == refund_id).first()
    order = await Order.select().where(Order.id == row["order_id"]).first()
    done = await Refund.select(Refund.amount).where((Refund.order_id == order["id"]) & (Refund.status == SUCCEEDED))
    return RefundView(
        refund_id=row["id"],
        order_id=order["id"],
        checkout_session_id=order["session_id"],
        status=row["status"],
        amount=int(row["amount"]),
        currency=sessions.CURRENCY,
        reason=row["reason"],
        psp_refund_id=row["psp_refund_id"],
        receipt_id=row["receipt_id"],
        credits_taken_back_usdc=usdc(int(row["credits_taken"])),
        share_taken_back_usdc=usdc(int(row["share_taken"])),
        refunded_total=sum(int(r["amount"]) for r in done),
        order_total=int(order["total"]),
        error=row["error"],
        created_at=iso(int(row["created_ms"])),
    )


async def _reserve(platform: Platform, order_id: str, key: str, body: RefundRequest) -> tuple[str, bool]:
    """The key's refund (the id, and whether it is to be asked of the PSP now)."""
    in_flight_ms = number(platform.settings(FAMILY), IN_FLIGHT_S, low=1) * 1000
    fingerprint = _hash(str(body.amount), body.reason)
    async with storage.transaction():
        order = await storage.lock_rows(Order.select().where(Order.id == order_id)).first()
        if order is None:
            raise Refusal("not_found", f"No order {order_id!r}.", status=404)
        found = await Refund.select().where(Refund.key_hash == _hash(order_id, key)).first()
        now = now_ms()
        if found is not None:
            if found["fingerprint"] != fingerprint:
                raise Refusal(
                    "idempotency_conflict", "This Idempotency-Key was used for another refund request.", status=422
                )
            if found["status"] != PENDING:
                return found["id"], False
            if found["started_ms"] > now - in_flight_ms:
                raise Refusal(
                    "refund_in_progress",
                    "This refund is being made: ask again in a moment.",
                    status=409,
                    headers={"Retry-After": "1"},
                )
            await Refund.update({Refund.started_ms: now}).where(Refund.id == found["id"])
            return found["id"], True
        left = await _left(order)
        amount = left if body.amount is None else body.amount
        if left <= 0 or amount > left:
            raise Refusal(
                "exceeds_paid",
                f"The order has {left} cents left to refund, not {amount}.",
                status=409,
                extra={"refundable": left},
            )
        refund_id = await _insert(order_id, key, fingerprint, amount, body.reason, now)
    return refund_id, True


async def _left(order: dict[str, Any]) -> int:
    """Cents of the order not yet refunded nor being refunded (its row locked by the caller)."""
    live = await Refund.select(Refund.amount).where((Refund.order_id == order["id"]) & Refund.status.is_in(LIVE))
    return int(order["total"]) - sum(int(r["amount"]) for r in live)


async def _insert(order_id: str, key: str, fingerprint: str, amount: int, reason: str, now: int) -> str:
    """A new refund, pending (the PSP to be asked); its id."""
    refund_id = sessions.new_id("rf")
    await Refund.insert(
        Refund(
            id=refund_id,
            order_id=order_id,
            key_hash=_hash(order_id, key),
            fingerprint=fingerprint,
            amount=amount,
            reason=reason,
            status=PENDING,
            started_ms=now,
            created_ms=now,
            updated_ms=now,
        )
    )
    return refund_id


async def make(platform: Platform, refund_id: str) -> None:
    """Ask the PSP for the pending refund `refund_id` and write what it answered."""
    psp = sessions.psp_of(platform)
    row = await Refund.select().where(Refund.id == refund_id).first()
    order = await Order.select().where(Order.id == row["order_id"]).first()
    try:
        answer = await psp.refund_amount(
            payment=order["payment_intent"],
            amount=int(row["amount"]),
            key=f"tollway-refund-{refund_id}",
            metadata={"order_id": order["id"], "refund_id": refund_id},
        )
    except PspRefused as exc:
        await _fail(refund_id, str(exc))
        return
    if answer.status in ("failed", "canceled"):
        await _fail(refund_id, f"the PSP's refund {answer.id} is {answer.status}")
        return
    await _succeed(platform, refund_id, answer.id)


async def _fail(refund_id: str, why: str) -> None:
    await Refund.update({Refund.status: FAILED, Refund.error: why, Refund.updated_ms: now_ms()}).where(
        (Refund.id == refund_id) & (Refund.status == PENDING)
    )


async def _succeed(platform: Platform, refund_id: str, psp_refund_id: str) -> None:
    """What the refund moves, its receipt and the order event, in one transaction."""
    webhook = False
    async with storage.transaction():
        row = await storage.lock_rows(Refund.select().where(Refund.id == refund_id)).first()
        if row["status"] != PENDING:
            return
        order = await Order.select().where(Order.id == row["order_id"]).first()
        made = await platform.refund_outside_sale(
            order["receipt_id"],
            refund_id=refund_id,
            amount=int(row["amount"]) * catalogue.MICRO_PER_CENT,
            payment_reference=psp_refund_id,
            reason=row["reason"] or "refunded by the operator",
        )
        await Refund.update(
            {
                Refund.status: SUCCEEDED,
                Refund.psp_refund_id: psp_refund_id,
                Refund.receipt_id: made["receipt"]["receipt_id"],  # type: ignore[index]
                Refund.credits_taken: made["credits_taken"],
                Refund.share_taken: made["share_taken"],
                Refund.updated_ms: now_ms(),
            }
        ).where(Refund.id == refund_id)
        await _end_refunded_soul_order(order)
        webhook = await _order_updated(platform, order, refund_id)
    if webhook:
        await platform.webhooks_due()


async def _end_refunded_soul_order(order: dict[str, Any]) -> None:
    """A soul service's order refunded in full, not fulfilled yet, ends `refunded` in the souls
    marketplace (the seller can no longer fulfil it), through the souls plugin's own function."""
    done = await Refund.select(Refund.amount).where((Refund.order_id == order["id"]) & (Refund.status == SUCCEEDED))
    if sum(int(r["amount"]) for r in done) < int(order["total"]) or not any(
        i.startswith("soul:") for i in await _items(order)
    ):
        return
    from tollway_souls.orders import refund_paid_order  # a soul service was sold: the souls plugin is there

    await refund_paid_order(order["session_id"], "refunded in full by the merchant's operator")


async def _items(order: dict[str, Any]) -> list[str]:
    """The item ids the order's session sold."""
    session = (
        await CheckoutSession.select(CheckoutSession.state).where(CheckoutSession.id == order["session_id"]).first()
    )
    return [li["item"]["id"] for li in storage.loads(session["state"])["line_items"]]


async def _order_updated(platform: Platform, order: dict[str, Any], refund_id: str) -> bool:
    """ACP's order_update with every refund of the order, to the platform's webhook (if any)."""
    token = await AcpToken.select().where(AcpToken.id == order["token_id"]).first()
    if not token or not token["webhook_url"] or not token["webhook_secret"]:
        return False
    refunds = (
        await Refund.select(Refund.amount)
        .where((Refund.order_id == order["id"]) & (Refund.status == SUCCEEDED))
        .order_by(Refund.created_ms)
    )
    items = await _items(order)
    event = acp.WebhookEvent(
        type="order_update",
        data=acp.EventDataOrder(
            checkout_session_id=order["session_id"],
            permalink_url=f"{public_url(platform.settings(FAMILY))}/v1/commerce/orders/{order['id']}",
            # credits are delivered with the payment (fulfilled); a soul service is the seller's to fulfil
            status="fulfilled" if all(i.startswith("credits_") for i in items) else "confirmed",
            refunds=[acp.Refund(type="original_payment", amount=int(r["amount"])) for r in refunds],
        ),
    )
    return await platform.enqueue_webhook(
        webhook_id=f"{refund_id}_update",  # at most 40 characters
        kind="acp.order_update",
        subject=order["session_id"],
        url=token["webhook_url"],
        secret=token["webhook_secret"],
        body=acp.to_builtins(event),
        signing="acp",
    )


async def refund(platform: Platform, order_id: str, key: str, body: RefundRequest) -> RefundView:
    try:
        sessions.psp_of(platform)
    except AcpError as exc:
        raise Refusal("provider_unavailable", exc.message, status=503) from exc
    refund_id, ask = await _reserve(platform, order_id, key, body)
    if ask:
        try:
            await make(platform, refund_id)
        except PspError as exc:  # no answer: left pending, for a retry of the request or the reconciler
            raise Refusal(
                "psp_unavailable",
                f"The payment service did not answer ({exc}); the refund is finished by a retry or the reconciler.",
                status=503,
                headers={"Retry-After": "5"},
            ) from exc
    return await _view(refund_id)


async def sweep(platform: Platform, cutoff_ms: int) -> int:
    """Finish refunds left pending since before `cutoff_ms` (the reconciler); how many."""
    done = 0
    for row in await Refund.select(Refund.id, Refund.started_ms).where(
        (Refund.status == PENDING) & (Refund.started_ms < cutoff_ms)
    ):
        claimed = (
            await Refund.update({Refund.started_ms: now_ms()})
            .where((Refund.id == row["id"]) & (Refund.started_ms == row["started_ms"]) & (Refund.status == PENDING))
            .returning(Refund.id)
        )
        if claimed:
            await make(platform, row["id"])
            done += 1
    return done


async def refund_ended_soul_orders(platform: Platform) -> int:
    """Refund in full, once, every soul service sold over ACP whose souls order ended declined or
    expired (the reconciler); how many refunds the PSP made. Only the orders still watched
    (`soul_order_open`) are asked of the souls plugin (`order_states`), in pages of 500; one
    that ended any other way (fulfilled, refunded by the operator) is no longer watched. The
    refund is the operator route's, under the order's fixed key AUTO_KEY, for all that is left;
    a PSP that does not answer leaves it pending for `sweep`."""
    done, after = 0, ""
    while True:
        watched = (
            await Order.select(Order.id, Order.session_id)
            .where(Order.soul_order_open.eq(True) & (Order.id > after))
            .order_by(Order.id)
            .limit(PAGE)
        )
        if not watched:
            return done
        after = watched[-1]["id"]
        try:
            from tollway_souls.orders import order_states  # soul services were sold: the souls plugin was there

            states = await order_states([r["session_id"] for r in watched])
        except Exception:  # the souls plugin is gone (not installed, no tables): nothing to learn
            log.warning("soul service orders are watched but the souls plugin cannot be asked", exc_info=True)
            return done
        for row in watched:
            state = states.get(row["session_id"], {"state": None, "note": None})
            if state["state"] == OPEN:
                continue
            try:
                done += await _refund_ended(platform, row["id"], state["state"], state["note"])
            except Exception:  # one order's trouble does not hold the others back; a pending refund is `sweep`'s
                log.exception("the reconciler could not refund order %s, whose souls order ended", row["id"])


async def _refund_ended(platform: Platform, order_id: str, state: str | None, note: str | None) -> int:
    """1 when the PSP refunded the order whose souls order ended, else 0."""
    refund_id = await _reserve_ended(order_id, state, note)
    if refund_id is None:
        return 0
    try:
        await make(platform, refund_id)
    except PspError:
        log.warning("the refund %s of order %s is left pending: the PSP did not answer", refund_id, order_id)
        return 0
    return 1


async def _reserve_ended(order_id: str, state: str | None, note: str | None) -> str | None:
    """The order is no longer watched; the refund of what is left of it, pending, when its souls
    order ended undelivered (`state` None: it has none). Waits while another refund of it is
    pending (its outcome decides what is left)."""
    reason = ENDED.get(state or "")
    async with storage.transaction():
        order = await storage.lock_rows(Order.select().where(Order.id == order_id)).first()
        if not order["soul_order_open"]:
            return None  # another process took it
        if reason and await Refund.exists().where((Refund.order_id == order_id) & (Refund.status == PENDING)):
            return None  # the next sweep, once the pending refund has its outcome
        await Order.update({Order.soul_order_open: False}).where(Order.id == order_id)
        if not reason or await Refund.exists().where(Refund.key_hash == _hash(order_id, AUTO_KEY)):
            return None
        left = await _left(order)
        if left <= 0:
            return None  # the operator refunded it all already
        reason = f"{reason}: {note}" if note else reason
        return await _insert(order_id, AUTO_KEY, _hash("None", reason), left, reason[:500], now_ms())


async def _handle(call: RouteCall) -> RefundView:
    key = (call.request.header("idempotency-key") or "").strip()
    if not 1 <= len(key) <= 255:
        raise Refusal(
            "idempotency_key_required", "Send an Idempotency-Key header (1 to 255 characters): a refund is made once."
        )
    view = await refund(call.platform, call.params["order_id"], key, call.body)  # type: ignore[arg-type]
    if view.status == FAILED:
        raise Refusal(
            "refund_refused",
            f"The payment service refused the refund: {view.error}",
            status=502,
            extra=msgspec.to_builtins(view),
        )
    return view


ROUTES = (
    Route(
        method="POST",
        path=PATH,
        name="operator_refund_acp_order",
        title="Refund an ACP order",
        description="Refunds a completed ACP order in full or in part (amount in cents; left out, all that is left) at the "
        "payment service provider, takes back what it sold (unspent credits, a soul seller's share), writes the buyer's "
        "refund receipt and sends the agent platform the order_update event with the order's refunds. Idempotency-Key "
        "required; never more than was paid.",
        handle=_handle,
        auth="operator",
        rate_limit=None,
        body_type=RefundRequest,
        answer_type=RefundView,
        status=201,
        tags=("operator",),
        param_docs=(("order_id", "The order's id (ord_...), as the completed session's order.id."),),
        statuses=(400, 401, 404, 409, 422, 502, 503),
    ),
)
