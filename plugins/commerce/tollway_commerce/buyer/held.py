"""Orders held for the operator (`outcome_unknown`): `complete` was sent and the merchant never
said, within TOLLWAY_COMMERCE_BUY_OUTCOME_WAIT_S, whether it took the payment; the job is parked
with no retry, the agent's payment neither refunded nor kept (docs/commerce.md, "Payments whose
outcome is unknown"). `POST /v1/tools/internal/commerce/orders/{order_id}/resolve` (operator
token) ends one: asking the merchant again now with the identical complete request, or by
what the merchant told the operator; the job is then ended from outside its runs
(`Platform.finish_job` / `fail_job`) in the transaction that records the order."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from tollway import Refusal, Route, RouteCall, storage

from . import money
from .acp_client import AcpClient
from .buy_tool import checkout_failure, fail_order, payment_of, record
from .checkout import CheckoutFailed, Completed, OutcomeUnknown, Purchase, settle
from .settings import FAMILY, token_ttl_s
from .tables import Merchant, Order
from .wire import CommerceBuyInput, CommerceHeldOrderIn, CommerceHeldOrderOut

PATH = "/v1/tools/internal/commerce/orders/{order_id}/resolve"
HELD = "outcome_unknown"


async def _ended(call: RouteCall, order: dict[str, Any], outcome: Completed | CheckoutFailed) -> CommerceHeldOrderOut:
    platform = call.platform
    if isinstance(outcome, Completed):
        await record(platform, order, outcome, finish=True)
        return CommerceHeldOrderOut(order_id=order["id"], state="completed", job_status="completed")
    message = checkout_failure(outcome.reason).message
    async with storage.transaction():
        await fail_order(order["id"], outcome.reason)
        await platform.fail_job(order["id"], "checkout_failed", message)  # type: ignore[union-attr]
    return CommerceHeldOrderOut(order_id=order["id"], state="failed", job_status="failed")


async def resolve(call: RouteCall[CommerceHeldOrderIn]) -> CommerceHeldOrderOut:
    order = await Order.select().where(Order.id == call.params["order_id"]).first()
    if order is None:
        raise Refusal("not_found", f"No commerce order {call.params['order_id']!r}.", status=404)
    if order["state"] != HELD:
        raise Refusal(
            "invalid_request",
            f"The order is {order['state']!r}, not held for the operator ({HELD!r}): its job ends it.",
            status=409,
        )
    body = call.body if call.body is not None else CommerceHeldOrderIn()
    payment = payment_of(order)
    if body.outcome == "completed":
        told = {"id": body.merchant_order_id} if body.merchant_order_id else {}
        return await _ended(
            call,
            order,
            Completed(payment.session_id, payment.currency, payment.total_minor, payment.spent, told),
        )
    if body.outcome == "not_completed":
        return await _ended(call, order, CheckoutFailed("the merchant told the operator it did not complete it"))
    merchant = await Merchant.select().where(Merchant.id == order["merchant_id"]).first()
    if merchant is None:
        raise Refusal(
            "invalid_request",
            "The order's merchant was removed from this service: say the outcome it told you (`outcome`).",
            status=409,
        )
    settings = call.platform.settings(FAMILY) if call.platform is not None else {}
    purchase = Purchase(
        request_id=order["id"],
        merchant=merchant,
        value=msgspec.json.decode(order["request"], type=CommerceBuyInput),
        max_total=int(order["max_total"]),
        currency=payment.currency,
        rates=money.rates(settings),
        token_ttl_s=token_ttl_s(settings),
        session_id=payment.session_id,
    )
    async with httpx.AsyncClient() as http:  # a route gets no shared HTTP client
        try:
            outcome: Completed | CheckoutFailed = await settle(
                AcpClient(http, merchant, order["id"]), purchase, payment, again=True
            )
        except CheckoutFailed as exc:
            outcome = exc
        except OutcomeUnknown as exc:
            return CommerceHeldOrderOut(order_id=order["id"], state=HELD, job_status="processing", heard=str(exc))
    return await _ended(call, order, outcome)


ROUTE = Route(
    method="POST",
    path=PATH,
    name="operator_commerce_held_order_resolve",
    title="End a commerce order held for the operator",
    description="A commerce_buy whose merchant never said whether it took the payment is held (`outcome_unknown`: "
    "neither refunded nor kept). `ask` asks the merchant again now with the same complete request and goes by its "
    "answer; `completed` / `not_completed` record what the merchant told you. Completed: the order is settled and "
    "the job completed; not completed: the job fails `checkout_failed` and the agent is refunded; still unknown: "
    "nothing changes (`heard` says what the merchant answered).",
    handle=resolve,
    auth="operator",
    rate_limit=None,
    tags=("operator",),
    body_type=CommerceHeldOrderIn,
    answer_type=CommerceHeldOrderOut,
    param_docs=(("order_id", "The order's id: its commerce_buy job's request id."),),
    statuses=(401, 404, 409),
)
