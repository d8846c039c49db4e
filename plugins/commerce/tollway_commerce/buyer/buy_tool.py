"""`commerce_buy` (POST /v1/tools/commerce/buy, a paid job): an agent buys from one ACP
merchant. The price is `max_total_usdc` plus the service fee, charged up front (credits or
x402, as a compute goal's budget); the job runs the checkout at the merchant (checkout.py)
and keeps what the merchant charged (its USDC equivalent), giving back the rest of
`max_total_usdc` to the agent's credits. A checkout that cannot be completed fails the job
with `checkout_failed` and the whole price is refunded (the kernel refunds a failed job).

Before payment: the items are of one configured merchant, each a product its feed lists,
priced in a currency with a USDC rate, and their feed prices do not already exceed the cap.
The job's order row is written with the payment (`on_accept`); a run repeated after a crash
finds it and carries on (a completed order is answered again, never bought again)."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any, NoReturn

import msgspec

from tollway import (
    AcceptedJob,
    Admission,
    AdmissionChecks,
    Evidence,
    Example,
    FieldError,
    JobDeclaration,
    Parked,
    PluginContext,
    Refusal,
    Tool,
    ToolContext,
    ToolError,
    iso,
    now_ms,
    storage,
    to_micro,
    usdc,
)

from . import money
from .acp_client import AcpClient
from .checkout import (
    CheckoutFailed,
    Completed,
    OutcomeUnknown,
    Payment,
    Purchase,
    TokenIssuer,
    buy,
    cancel_quietly,
    settle,
)
from .settings import FAMILY, buy_fee, max_total_ceiling, outcome_wait_s, recheck_after_s, token_ttl_s
from .tables import Merchant, Order, Product
from .wire import CommerceBuyAnswer, CommerceBuyInput, CommerceOrderOut, CommercePrice

log = logging.getLogger("tollway.commerce.buyer")

FAILED = "commerce checkout could not be completed"
HINT = "verify cart or quote, retry"


def check(context: PluginContext, value: CommerceBuyInput) -> None:
    merchants = {item.merchant for item in value.items}
    if len(merchants) > 1:
        raise FieldError("items", "must all be from one merchant (one checkout per merchant)", "invalid")
    cap = to_micro(value.max_total_usdc)
    ceiling = max_total_ceiling(context.settings(FAMILY))
    if cap <= 0 or cap > ceiling:
        raise FieldError("max_total_usdc", f"must be above 0 and at most {usdc(ceiling)} USDC")


async def admit(context: PluginContext, value: CommerceBuyInput) -> Admission:
    merchant_id = value.items[0].merchant
    if await Merchant.select(Merchant.id).where(Merchant.id == merchant_id).first() is None:
        raise Refusal("not_found", f"No merchant {merchant_id!r} on this service.", status=404)
    rates = money.rates(context.settings(FAMILY))
    currencies: set[str] = set()
    feed_total = 0
    for n, item in enumerate(value.items):
        row = await Product.select().where(Product.id == f"{merchant_id}|{item.product_id}").first()
        if row is None:
            raise Refusal(
                "not_found",
                f"The merchant {merchant_id!r} lists no product {item.product_id!r} in its feed.",
                status=404,
                details=[{"field": f"items[{n}].product_id", "message": "no such product in the merchant's feed"}],
            )
        if row["currency"] is None or money.to_usdc(0, row["currency"], rates) is None:
            raise Refusal(
                "invalid_input",
                f"The product {item.product_id!r} is priced in {str(row['currency']).upper()}, which has no USDC rate on "
                "this service: it cannot be bought.",
                details=[{"field": f"items[{n}].product_id", "message": "priced in a currency without a USDC rate"}],
            )
        currencies.add(row["currency"])
        feed_total += int(row["usdc_micro"] or 0) * item.quantity
    if len(currencies) > 1:
        raise Refusal("invalid_input", "The items are priced in different currencies: buy them separately.")
    if feed_total > to_micro(value.max_total_usdc):
        raise Refusal(
            "invalid_input",
            f"The items' feed prices alone come to {usdc(feed_total)} USDC, above max_total_usdc {value.max_total_usdc}.",
            details=[{"field": "max_total_usdc", "message": f"below the feed prices ({usdc(feed_total)} USDC)"}],
        )
    try:
        issuer, _cost = context.platform.provider("psp")
    except LookupError:  # none configured: the kernel's own check refuses the call before this
        issuer = None
    problem = getattr(issuer, "issue_problem", lambda: None)()
    if problem is not None:
        raise Refusal(
            "provider_unavailable",
            f"commerce_buy is not configured on this service: {problem}. Nothing was charged.",
            status=503,
            details={"reason": "not_configured", "kind": "psp"},
        )
    return Admission(service_fee=buy_fee(context.settings(FAMILY)))


async def on_accept(context: PluginContext, job: AcceptedJob) -> None:
    value: CommerceBuyInput = job.value
    now = now_ms()
    await Order.insert(
        Order(
            id=job.request_id,
            agent_id=job.agent_id,
            receipt_id=job.receipt_id,
            merchant_id=value.items[0].merchant,
            state="accepted",
            request=storage.dumps(_builtins(value)),
            max_total=to_micro(value.max_total_usdc),
            fee=job.price - to_micro(value.max_total_usdc),
            created_ms=now,
            updated_ms=now,
        )
    ).on_conflict(target=Order.id, action="DO NOTHING")


def _builtins(value: CommerceBuyInput) -> Any:
    return msgspec.to_builtins(value)


def answer_of(order: dict[str, Any], merchant_name: str) -> CommerceBuyAnswer:
    spent = int(order["spent"] or 0)
    return CommerceBuyAnswer(
        result=CommerceOrderOut(
            order_id=order["id"],
            merchant=order["merchant_id"],
            merchant_order_id=order["merchant_order_id"],
            checkout_session_id=order["checkout_session_id"],
            status=order["order_status"] or "confirmed",
            permalink_url=order["permalink_url"],
            total=CommercePrice(amount=int(order["total_minor"]), currency=order["currency"], usdc=usdc(spent)),
            spent_usdc=usdc(spent),
            returned_usdc=usdc(int(order["max_total"]) - spent),
            fee_usdc=usdc(int(order["fee"])),
        ),
        evidence=Evidence.now(merchant_name, as_of=iso(int(order["updated_ms"])), source_kind="commercial"),
    )


def checkout_failure(reason: str) -> ToolError:
    return ToolError(
        "checkout_failed",
        f"{FAILED}: {reason} — {HINT}. Nothing was charged at the merchant and your payment is refunded.",
        status=502,
    )


# The states in which `complete` was (or may have been) sent: only the merchant's word ends them.
ASKING = ("completing", "outcome_unknown")
TIME_LIMIT_S = 120.0
# complete and its read-back must end within the run's time limit: a run timed out is failed and
# refunded, so a slow merchant parks the job (asked again by the next run) before the limit instead
SETTLE_MARGIN_S = 10.0
WAITING = (
    "paying: the merchant has not said whether it took the payment; asking it again shortly. Nothing is "
    "refunded or kept until it says."
)
HELD = (
    "paying: the merchant never said whether it took the payment; the order is held for the operator, "
    "neither refunded nor kept until they find out (docs/commerce.md, Payments whose outcome is unknown)."
)


async def run(value: CommerceBuyInput, ctx: ToolContext) -> CommerceBuyAnswer | Parked:
    deadline = time.monotonic() + TIME_LIMIT_S - SETTLE_MARGIN_S
    order = await Order.select().where(Order.id == ctx.request_id).first()
    if order is None or ctx.plugin is None:
        raise ToolError("internal_error", "The order was not recorded.", status=500)
    merchant = await Merchant.select().where(Merchant.id == order["merchant_id"]).first()
    name = merchant["name"] if merchant is not None else order["merchant_id"]
    if order["state"] == "completed":
        return answer_of(order, name)
    if order["state"] == "failed":
        raise checkout_failure(order["error"] or "it failed before")
    if merchant is None:
        if order["state"] in ASKING:  # it may have charged: only the operator can find out now
            return await _wait(ctx, order, "the merchant was removed from this service", hold=True)
        await fail_order(ctx.request_id, "the merchant was removed from this service")
        raise checkout_failure("the merchant was removed from this service")
    settings = ctx.settings
    product = (
        await Product.select(Product.currency)
        .where(Product.id == f"{merchant['id']}|{value.items[0].product_id}")
        .first()
    )
    purchase = Purchase(
        request_id=ctx.request_id,
        merchant=merchant,
        value=value,
        max_total=int(order["max_total"]),
        currency=(product or {}).get("currency") or "usd",
        rates=money.rates(settings),
        token_ttl_s=token_ttl_s(settings),
        session_id=order["checkout_session_id"],
        token_expires_at=order["token_expires_at"],
    )
    client = AcpClient(ctx.http, merchant, ctx.request_id)

    async def progress(state: str, **fields: Any) -> None:
        columns = {getattr(Order, k): v for k, v in fields.items()}
        await Order.update({Order.state: state, Order.updated_ms: now_ms(), **columns}).where(
            Order.id == ctx.request_id
        )
        await ctx.report({"session_open": "checkout session opened", "completing": "paying"}.get(state, state))

    if order["state"] in ASKING:  # a run after one that sent complete (or may have): ask, never start again
        payment = payment_of(order)
        again = True
    else:
        issuer: TokenIssuer = ctx.provider("psp")
        try:
            payment = await buy(client, issuer, purchase, progress)
        except CheckoutFailed as exc:
            await _failed(client, purchase, exc)
        again = False
    try:
        left = deadline - time.monotonic()
        if left < 1:
            raise OutcomeUnknown("no time was left in this run to ask the merchant")
        done = await asyncio.wait_for(settle(client, purchase, payment, again=again), left)
    except CheckoutFailed as exc:  # the merchant's word: it did not complete
        await _failed(client, purchase, exc)
    except Exception as exc:  # OutcomeUnknown, or anything else once complete may have been sent: never refund
        if not isinstance(exc, OutcomeUnknown):
            log.exception("commerce order %s: asking the merchant about its payment failed", ctx.request_id)
        return await _wait(ctx, order, str(exc) or type(exc).__name__)
    try:
        order = await record(ctx.plugin.platform, order, done)
    except Exception:  # the merchant completed: failing now would refund a purchase it charged
        log.exception("commerce order %s completed at the merchant but could not be recorded", ctx.request_id)
        return await _wait(ctx, order, "the merchant completed the order; recording it failed")
    return answer_of(order, name)


def payment_of(order: dict[str, Any]) -> Payment:
    return Payment(
        session_id=str(order["checkout_session_id"]),
        handler_id=order["payment_handler_id"],
        token=order["payment_token"],
        currency=str(order["currency"]),
        total_minor=int(order["total_minor"]),
        spent=int(order["spent"]),
    )


async def _failed(client: AcpClient, purchase: Purchase, exc: CheckoutFailed) -> NoReturn:
    """The purchase ended without the merchant completing it: cancel its session, fail the order, refund."""
    if purchase.session_id is not None:
        await cancel_quietly(client, purchase, purchase.session_id)
    await fail_order(purchase.request_id, exc.reason)
    raise checkout_failure(exc.reason) from exc


async def _wait(ctx: ToolContext, order: dict[str, Any], why: str, *, hold: bool = False) -> Parked:
    """complete was sent and how it ended is not known: the job asks again later (the kernel runs
    it again after the wait: `Parked(retry_after_s=...)`), until TOLLWAY_COMMERCE_BUY_OUTCOME_WAIT_S
    after the first complete; then the order is held for the operator (`outcome_unknown`, the job
    parked with no retry). Neither refunds nor keeps the agent's payment."""
    now = now_ms()
    waited_s = max(now - int(order.get("completing_ms") or now), 0) / 1000
    if hold or waited_s >= outcome_wait_s(ctx.settings):
        log.error(
            "commerce order %s: merchant %s never said whether it completed session %s (%s); held for the operator",
            order["id"],
            order["merchant_id"],
            order["checkout_session_id"],
            why,
        )
        try:
            await Order.update({Order.state: "outcome_unknown", Order.error: why, Order.updated_ms: now}).where(
                Order.id == order["id"], Order.state.is_in(list(ASKING))
            )
        except Exception:  # the database is down: the job is held all the same; its next run writes it
            log.exception("commerce order %s: holding it for the operator was not recorded", order["id"])
        return Parked(HELD)
    delay = recheck_after_s(ctx.settings, waited_s)
    log.warning(
        "commerce order %s: the merchant's outcome is unknown (%s); asking again in %g s", order["id"], why, delay
    )
    return Parked(WAITING, retry_after_s=delay)


async def fail_order(order_id: str, reason: str) -> None:
    await Order.update(
        {Order.state: "failed", Order.error: reason, Order.payment_token: None, Order.updated_ms: now_ms()}
    ).where(Order.id == order_id, Order.state != "completed")


async def record(platform: Any, order: dict[str, Any], done: Completed, *, finish: bool = False) -> dict[str, Any]:
    """Record the merchant's order and give back what the cap left, in one transaction (once: a
    repeated run finds the order completed, and a receipt's unspent part is returned once); with
    `finish`, the job is completed with its answer in that transaction too (an order ended from
    outside its runs: held.py)."""
    status = str(done.order.get("status") or "confirmed")
    async with storage.transaction():
        await Order.update(
            {
                Order.state: "completed",
                Order.checkout_session_id: done.session_id,
                Order.currency: done.currency,
                Order.total_minor: done.total_minor,
                Order.spent: done.spent,
                Order.merchant_order_id: str(done.order.get("id") or ""),
                Order.error: None,
                Order.payment_token: None,  # used: nothing to send again
                Order.updated_ms: now_ms(),
            }
        ).where(Order.id == order["id"])
        # the merchant's order events may have come first (they are sent as it completes): theirs stand
        await Order.update(
            {Order.order_status: status[:20], Order.permalink_url: done.order.get("permalink_url")}
        ).where(Order.id == order["id"], Order.order_status.is_null())
        unspent = int(order["max_total"]) - done.spent
        if unspent > 0:
            await platform.return_unspent(
                order["receipt_id"], unspent, reason=f"commerce order {order['id']}: max_total_usdc not spent"
            )
        row = await Order.select().where(Order.id == order["id"]).first()
        if finish:
            merchant = await Merchant.select(Merchant.name).where(Merchant.id == row["merchant_id"]).first()
            answer = answer_of(row, merchant["name"] if merchant is not None else row["merchant_id"])
            await platform.finish_job(order["id"], msgspec.to_builtins(answer))
    return row


def commerce_buy_tool(context: PluginContext) -> Tool:
    """The `commerce_buy` tool of the service `context` belongs to (its price and checks read its settings)."""

    def price(value: CommerceBuyInput) -> int:
        return to_micro(value.max_total_usdc) + buy_fee(context.settings(FAMILY))

    return Tool(
        name="commerce_buy",
        path="/v1/tools/commerce/buy",
        title="Buy from an ACP merchant (price: max_total_usdc + fee)",
        summary="Buys products commerce_search found, at one ACP merchant, within a USDC cap.",
        description=(
            "Buys items from one ACP merchant this service is configured for (product ids from commerce_search), "
            "shipped to `fulfillment_address` with the merchant's `fulfillment_option` (left out: its cheapest). You "
            "are charged max_total_usdc plus the service fee up front; the job opens an Agentic Commerce Protocol "
            "checkout session at the merchant, refuses to pay if the merchant's total (items, tax, shipping) is above "
            "max_total_usdc, pays exactly the total with a single-use delegated payment token, and gives back to your "
            "credits what the total did not use. If the checkout cannot be completed (declined, out of stock, price "
            "above the cap, 3-D Secure required, merchant down) the job fails `checkout_failed` and everything is "
            "refunded. The merchant's later order updates (shipped, refunds) come as notifications."
        ),
        category="commerce",
        subcategory="purchase",
        input_type=CommerceBuyInput,
        output_type=CommerceBuyAnswer,
        run=run,
        price=price,
        family=FAMILY,
        idempotency="optional",
        rate_limit="paid",
        time_limit_s=TIME_LIMIT_S,
        job=JobDeclaration(
            accepted_status="pending",
            refund_failed_jobs=True,
            on_accept=functools.partial(on_accept, context),
        ),
        admission=AdmissionChecks(
            check=functools.partial(check, context),
            admit=functools.partial(admit, context),
            provider_kind="psp",
        ),
        examples=(
            Example(
                "One tee, shipped the cheapest way, at most 30 USDC",
                {
                    "items": [{"merchant": "acme", "product_id": "sku124-red-m", "quantity": 1}],
                    "buyer": {"name": "Ada Lovelace", "email": "ada@example.com"},
                    "fulfillment_address": {
                        "name": "Ada Lovelace",
                        "line_one": "1234 Chat Road",
                        "city": "San Francisco",
                        "state": "CA",
                        "country": "US",
                        "postal_code": "94131",
                    },
                    "max_total_usdc": "30",
                },
            ),
        ),
    )
