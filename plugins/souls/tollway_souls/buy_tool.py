"""`soul_buy`: an agent buys a soul's service, paid by x402 or credits through the kernel's
paid-call pipeline. Before payment the soul and service must exist, the service be enabled
and its current price equal the one the buyer names; the receipt carries the soul and the
service's fee. The job then waits for the seller (a parked job) and completes with what
the seller delivers, or fails refunded when the seller declines or the deadline passes.
Its admission and acceptance read the service's settings and platform, so the tool is built
for one service's `PluginContext` (`soul_buy_tool`)."""

from __future__ import annotations

import functools

from tollway import Admission, Example, Parked, PluginContext, Refusal, Tool, ToolContext, storage, to_micro, usdc

from . import orders
from .catalogue import MAX_PRICE, MIN_PRICE
from .settings import FAMILY, fee_percent, split
from .tables import SoulAgent as Souls
from .tables import SoulService as Services
from .wire import BuyInput, BuyResult

WAITING = "waiting for the seller to fulfil the order"
MAX_REQUEST_BYTES = 20_000


def check(value: BuyInput) -> None:
    problems = []
    if not MIN_PRICE <= to_micro(value.price_usdc) <= MAX_PRICE:
        problems.append({"field": "price_usdc", "message": "must be from 0.01 to 1000"})
    if len(storage.dumps(value.request)) > MAX_REQUEST_BYTES:
        problems.append({"field": "request", "message": f"must be at most {MAX_REQUEST_BYTES} bytes of JSON"})
    if problems:
        raise Refusal(
            "invalid_request", "; ".join(f"{p['field']} {p['message']}" for p in problems) + ".", details=problems
        )


async def admit(context: PluginContext, value: BuyInput) -> Admission:
    soul = await Souls.select(Souls.id).where(Souls.slug == value.soul).first()
    if soul is None:
        raise Refusal(
            "not_found", f"No soul {value.soul!r}.", status=404, details=[{"field": "soul", "message": "no such soul"}]
        )
    service = (
        await Services.select(Services.price, Services.enabled)
        .where((Services.soul_id == soul["id"]) & (Services.slug == value.service))
        .first()
    )
    if service is None:
        raise Refusal(
            "not_found",
            f"The soul {value.soul!r} offers no service {value.service!r}.",
            status=404,
            details=[{"field": "service", "message": "no such service"}],
        )
    if not service["enabled"]:
        raise Refusal("service_disabled", f"The service {value.service!r} is not for sale now.", status=409)
    price = to_micro(value.price_usdc)
    if int(service["price"]) != price:
        raise Refusal(
            "price_changed",
            f"The service costs {usdc(int(service['price']))} USDC now, not {usdc(price)}: buy again at the current price.",
            status=409,
            extra={"price_usdc": usdc(int(service["price"]))},
        )
    _share, fee = split(price, fee_percent(dict(context.settings(FAMILY))))
    return Admission(soul_agent_id=soul["id"], service_fee=fee)


async def run(value: BuyInput, ctx: ToolContext) -> Parked:
    """On a worker: make sure the seller's webhook goes out, then wait for the seller."""
    if ctx.plugin is not None:  # a run on a service (always): its outbox is woken
        await ctx.plugin.platform.webhooks_due()
    return Parked(WAITING)


def soul_buy_tool(context: PluginContext) -> Tool:
    """The `soul_buy` tool of the service `context` belongs to."""
    return Tool(
        name="soul_buy",
        path="/v1/tools/souls/buy",
        title="Buy a soul's service",
        description=(
            "Buy a service another agent (a soul) sells on the marketplace, at the price it lists. The seller receives the "
            "order with your request and delivers a result, which becomes this job's result. If the seller declines or does "
            "not deliver before the deadline, the job fails and the price is refunded to your credits."
        ),
        summary="Buy a service another agent (a soul) sells, at its listed price; the seller's delivery is the job's result.",
        category="agent_to_agent",
        subcategory="soul_service",
        input_type=BuyInput,
        output_type=BuyResult,
        run=run,
        price=lambda value: to_micro(value.price_usdc),
        family=FAMILY,
        mode="job",
        accepted_status="pending",
        idempotency="optional",
        rate_limit="paid",
        check=check,
        admit=functools.partial(admit, context),
        on_accept=functools.partial(orders.accept, context),
        time_limit_s=30.0,
        examples=(
            Example(
                "Buy a translation",
                {"soul": "lingua", "service": "translate", "price_usdc": "1.25", "request": {"text": "Good morning"}},
            ),
        ),
    )
