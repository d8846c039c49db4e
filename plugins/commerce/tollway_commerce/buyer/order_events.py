"""The merchants' order webhooks (`openapi.agentic_checkout_webhook.yaml`): a merchant POSTs
`order_create` / `order_update` events for the orders agents placed through commerce_buy to
`/v1/commerce/merchants/{merchant_id}/order-events`. The body must carry a valid
`Merchant-Signature` made with the merchant's webhook secret (docs/commerce.md, "Order
webhooks"); the order's status, permalink and refunds are updated and its agent notified;
each refund is credited to the agent once, in USDC at the purchase's rate (`credit_refunds`).
Answers are ACP's: `{received: true}` or its flat error object."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

import msgspec

from tollway import Platform, Route, RouteCall, RouteReply, now_ms, storage, usdc

from .tables import Merchant, Order

PATH = "/v1/commerce/merchants/{merchant_id}/order-events"
NOTIFICATION = "commerce_order_updated"
REFUND_NOTIFICATION = "commerce_refund_credited"  # a merchant's refund credited to the agent
STATUSES = ("created", "manual_review", "confirmed", "canceled", "shipped", "fulfilled")
# An order's statuses in their order: events carry no sequence number and may arrive out of
# order (a merchant's outbox retries each on its own), so an event never moves an order back.
RANK = {"created": 0, "manual_review": 1, "confirmed": 2, "shipped": 3, "fulfilled": 4, "canceled": 5}


def _error(status: int, type_: str, code: str, message: str, param: str | None = None) -> RouteReply:
    body: dict[str, str] = {"type": type_, "code": code, "message": message}
    if param is not None:
        body["param"] = param
    return RouteReply(status, body)


def _signatures(header: str) -> list[bytes]:
    """The signature values a header carries: hex or base64(url), alone or as `v1=` parts of `t=..,v1=..`."""
    parts = [p.strip() for p in header.split(",")]
    values = [p.split("=", 1)[1] for p in parts if p.startswith("v1=")] or [header.strip()]
    found: list[bytes] = []
    for v in values:
        try:
            found.append(bytes.fromhex(v))
            continue
        except ValueError:
            pass
        try:
            found.append(base64.urlsafe_b64decode(v.replace("+", "-").replace("/", "_") + "=" * (-len(v) % 4)))
        except ValueError:
            pass
    return found


def _stamp(header: str) -> str | None:
    for part in header.split(","):
        if part.strip().startswith("t="):
            return part.strip()[2:]
    return None


def verified(secret: str, raw: bytes, signature: str, timestamp: str | None) -> bool:
    """Whether `signature` is HMAC-SHA256 with `secret` of the raw body, or of "<timestamp>.<body>"
    (the timestamp from the header's `t=` or the `Timestamp` header)."""
    signed = [raw]
    for stamp in (_stamp(signature), timestamp):
        if stamp:
            signed.append(stamp.encode() + b"." + raw)
    expected = [hmac.new(secret.encode(), message, hashlib.sha256).digest() for message in signed]
    return any(hmac.compare_digest(e, s) for e in expected for s in _signatures(signature))


async def receive(call: RouteCall) -> Any:
    merchant = (
        await Merchant.select(Merchant.id, Merchant.name, Merchant.webhook_secret)
        .where(Merchant.id == call.params["merchant_id"])
        .first()
    )
    signature = call.request.header("merchant-signature") or ""
    if merchant is None or not merchant["webhook_secret"] or not signature:
        return _error(
            401, "invalid_request", "invalid_signature", "The event is not signed by a merchant of this service."
        )
    raw = call.request.body
    if not verified(merchant["webhook_secret"], raw, signature, call.request.header("timestamp")):
        return _error(401, "invalid_request", "invalid_signature", "Merchant-Signature does not match the body.")
    try:
        event = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return _error(400, "invalid_request", "invalid_json", "The body is not JSON.")
    data = event.get("data") if isinstance(event, Mapping) else None
    if (
        not isinstance(data, Mapping)
        or event.get("type") not in ("order_create", "order_update")
        or not isinstance(data.get("checkout_session_id"), str)
        or data.get("status") not in STATUSES
    ):
        return _error(400, "invalid_request", "invalid_event", "The body is not an ACP order event.", "$.data")
    order = (
        await Order.select()
        .where(Order.merchant_id == merchant["id"], Order.checkout_session_id == data["checkout_session_id"])
        .first()
    )
    if order is None:
        return _error(404, "invalid_request", "not_found", "No order of this service has that checkout session.")
    refunds = [r for r in data.get("refunds") or [] if isinstance(r, Mapping)]
    if any(not isinstance(r.get("amount"), int) or r["amount"] < 0 for r in refunds):
        return _error(
            400, "invalid_request", "invalid_event", "A refund's amount is not minor units.", "$.data.refunds"
        )
    answer: dict[str, Any] = {"received": True}
    if call.request.header("request-id"):
        answer["request_id"] = call.request.header("request-id")
    await credit_refunds(call.platform, order, merchant["name"], refunds)  # type: ignore[arg-type]
    # An older event than one already applied is received and changes nothing. The guard is in
    # the update itself: two events delivered at once must not both pass a check read before.
    not_later = [s for s in STATUSES if RANK[s] <= RANK[data["status"]]]
    async with storage.transaction():
        applied = (
            await Order.update(
                {
                    Order.order_status: data["status"],
                    Order.permalink_url: data.get("permalink_url") or order["permalink_url"],
                    Order.refunds: storage.dumps(refunds),
                    Order.updated_ms: now_ms(),
                }
            )
            .where((Order.id == order["id"]) & (Order.order_status.is_null() | Order.order_status.is_in(not_later)))
            .returning(Order.id)
        )
        if not applied:
            return answer
        await call.platform.notify(  # type: ignore[union-attr]
            order["agent_id"],
            NOTIFICATION,
            f"Your order at {merchant['name']} is {data['status']}",
            None,
            {
                "order_id": order["id"],
                "merchant": merchant["id"],
                "checkout_session_id": data["checkout_session_id"],
                "status": data["status"],
                "permalink_url": data.get("permalink_url"),
                "refunds": refunds,
            },
        )
    return answer


async def credit_refunds(platform: Platform, order: Mapping[str, Any], merchant: str, refunds: list[Any]) -> int:
    """Credit the agent the USDC equivalent of each refund of the merchant's not credited yet;
    how many were. An event carries all of the order's refunds (2026-01-30's `refunds[]`, no
    ids), so the n-th refund of the list is refund n of the order (`<order id>:refund:<n>`),
    credited once whichever events repeat it. Converted at the purchase's own rate (what was
    spent for the total), cumulatively rounded down, so the refunds never credit more than
    the agent spent on the order; a refund reported before the order was recorded completed
    waits for the next event."""
    spent, total = order["spent"], order["total_minor"]
    if order["state"] != "completed" or not spent or not total:
        return 0
    credited = 0
    paid_back = 0  # minor units refunded by the refunds before this one
    for n, refund in enumerate(refunds):
        before = min(paid_back, total) * int(spent) // int(total)
        paid_back += int(refund["amount"])
        amount = min(paid_back, total) * int(spent) // int(total) - before
        refund_id = f"{order['id']}:refund:{n}"
        if amount <= 0:
            continue
        async with storage.transaction():
            receipt = await platform.credit_outside_refund(
                order["receipt_id"],
                refund_id=refund_id,
                amount=amount,
                limit=int(spent),
                reason=f"{merchant} refunded {refund['amount']} {order['currency']} minor units ({refund.get('type')})",
            )
            if receipt is None:
                continue
            await platform.notify(
                order["agent_id"],
                REFUND_NOTIFICATION,
                f"{merchant} refunded {usdc(amount)} USDC of your order",
                None,
                {
                    "order_id": order["id"],
                    "merchant": order["merchant_id"],
                    "checkout_session_id": order["checkout_session_id"],
                    "refund_id": refund_id,
                    "refund": {
                        "type": refund.get("type"),
                        "amount": int(refund["amount"]),
                        "currency": order["currency"],
                    },
                    "credited_usdc": usdc(amount),
                    "receipt_id": receipt["receipt_id"],
                },
            )
            credited += 1
    return credited


ROUTE = Route(
    method="POST",
    path=PATH,
    name="commerce_order_events",
    title="Receive a merchant's order event",
    description="An ACP merchant posts its order_create and order_update events here, signed with the webhook secret "
    "the operator configured for it (Merchant-Signature). The order is updated and its agent notified.",
    handle=receive,
    auth="public",
    raw_body=True,
    rate_limit=None,
    tags=("commerce",),
    param_docs=(("merchant_id", "The merchant's id on this service."),),
    statuses=(400, 401, 404),
)
