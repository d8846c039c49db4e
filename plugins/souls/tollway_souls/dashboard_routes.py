"""The seller dashboard, reached with the soul key (`Authorization: Bearer soul_<key>`): the
soul's own profile and services, its orders (fulfil or decline), its earnings, payouts of
its credits to its wallet, and the secret its order webhooks are signed with."""

from __future__ import annotations

from msgspec import UNSET
from piccolo.query.functions import Coalesce, Count, Sum

from tollway import QueryChoice, QueryInt, Refusal, Route, RouteCall, RouteReply, storage, to_micro, usdc

from . import catalogue, keys, orders, search
from .tables import SoulAgent as Souls
from .tables import SoulOrder as Orders
from .tables import SoulService as Services
from .wire import (
    Decline,
    Earnings,
    Fulfilment,
    Order,
    OrderList,
    Payout,
    PayoutList,
    PayoutRequest,
    ProfileChange,
    Service,
    ServiceChange,
    ServiceIn,
    SoulAgent,
    WebhookInfo,
)

TAGS = ("souls seller dashboard",)
KEY_STATUSES = (400, 401, 404, 409, 429)
ORDER_STATES = ("open", "fulfilled", "declined", "expired", "refunded")
# The listings' query parameters, declared once: the routes list them (OpenAPI) and the handlers read them.
STATE = QueryChoice("state", "open, fulfilled, declined, expired or refunded.", ORDER_STATES)
LIMIT = QueryInt("limit", "1 to 100, default 50.", default=50, low=1, high=100)
OFFSET = QueryInt("offset", "Items to skip.", default=0, low=0, high=1_000_000)
# what the kernel keeps of the seller's agent: its payouts and its credits
_PAID_OUT = storage.statement(
    "SELECT COALESCE(SUM(amount), 0) AS total FROM tw_payouts WHERE agent_id = {} AND status <> 'failed'"
)
_CREDITS = storage.statement("SELECT credits FROM tw_agents WHERE id = {}")


async def seller(call: RouteCall) -> dict:
    """The soul whose key the request carries; 401 for a missing or wrong key."""
    header = call.request.header("authorization") or ""
    key = header[7:].strip() if header[:7].lower() == "bearer " else ""
    row = (
        await Souls.select().where((Souls.key_hash == catalogue.key_hash(key)) & Souls.key_revoked_ms.is_null()).first()
        if key.startswith(catalogue.KEY_PREFIX)
        else None
    )
    if row is None:
        raise Refusal(
            "invalid_soul_key",
            "This route needs Authorization: Bearer soul_<key>, the key registration gave.",
            status=401,
        )
    return row


async def me(call: RouteCall) -> SoulAgent:
    return await catalogue.soul_out(await seller(call), enabled_only=False)


async def change_profile(call: RouteCall) -> SoulAgent:
    soul, change = await seller(call), call.body
    assert isinstance(change, ProfileChange)
    values = {
        k: v
        for k, v in (
            ("name", change.name),
            ("display_name", change.display_name),
            ("category", change.category),
            ("soul_md", change.soul_md),
            ("avatar_url", change.avatar_url),
        )
        if v is not UNSET
    }
    if change.webhook_url is not UNSET:
        if change.webhook_url and (problem := call.platform.webhook_target_problem(change.webhook_url)):
            raise Refusal(
                "invalid_request", f"webhook_url: {problem}.", details=[{"field": "webhook_url", "message": problem}]
            )
        values["webhook_url"] = change.webhook_url
        if change.webhook_url and not soul["webhook_secret"]:
            values["webhook_secret"] = call.platform.new_webhook_secret()
    async with storage.transaction():
        if values:
            await Souls.update(values).where(Souls.id == soul["id"])
        await search.reindex(soul["id"])
    return await catalogue.soul_out(await catalogue.soul(soul["id"]), enabled_only=False)


async def add_service(call: RouteCall) -> RouteReply:
    soul = await seller(call)
    if await Services.count().where(Services.soul_id == soul["id"]) >= 50:
        raise Refusal("too_many_services", "A soul offers at most 50 services.", status=409)
    async with storage.transaction():
        row = await catalogue.add_service(soul["id"], call.body)
        await search.reindex(soul["id"])
    return RouteReply(201, catalogue.service_out(row))


async def change_service(call: RouteCall) -> Service:
    soul = await seller(call)
    return catalogue.service_out(await catalogue.change_service(soul["id"], call.params["service"], call.body))


async def list_orders(call: RouteCall) -> OrderList:
    soul = await seller(call)
    state = STATE.read(call.query)
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    found, more = await orders.of_soul(soul["id"], state=state, limit=limit, offset=offset)
    return OrderList(orders=found, count=len(found), has_more=more)


async def get_order(call: RouteCall) -> Order:
    soul = await seller(call)
    row = await orders.get(call.params["order_id"])
    if row is None or row["soul_id"] != soul["id"]:
        raise Refusal("not_found", "No such order for this soul.", status=404)
    return await orders.order_out(row)


async def fulfil(call: RouteCall) -> Order:
    body: Fulfilment = call.body
    if len(storage.dumps(body.result)) > 100_000:
        raise Refusal(
            "invalid_request",
            "result must be at most 100,000 bytes of JSON.",
            details=[{"field": "result", "message": "too large"}],
        )
    return await orders.fulfil(call.platform, call.params["order_id"], await seller(call), body.result)


async def decline(call: RouteCall) -> Order:
    body: Decline = call.body
    return await orders.decline(call.platform, call.params["order_id"], await seller(call), body.reason)


async def earnings(call: RouteCall) -> Earnings:
    soul = await seller(call)
    done = (
        await Orders.select(
            Count(alias="n"),
            Coalesce(Sum(Orders.share), 0, alias="share"),
            Coalesce(Sum(Orders.price - Orders.share), 0, alias="fee"),
        )
        .where((Orders.soul_id == soul["id"]) & (Orders.state == "fulfilled"))
        .first()
    )
    open_ = await Orders.count().where((Orders.soul_id == soul["id"]) & (Orders.state == orders.OPEN))
    paid = await _PAID_OUT.row(soul["agent_id"])
    credits = await _CREDITS.row(soul["agent_id"])
    return Earnings(
        soul_agent_id=soul["id"],
        earned_usdc=usdc(int(done["share"])),
        service_fees_usdc=usdc(int(done["fee"])),
        orders_fulfilled=int(done["n"]),
        orders_open=int(open_),
        paid_out_usdc=usdc(int(paid["total"])),
        credits_balance=usdc(int(credits["credits"]) if credits else 0),
    )


async def pay_out(call: RouteCall) -> RouteReply:
    soul, body = await seller(call), call.body
    assert isinstance(body, PayoutRequest)
    to = body.to_address if body.to_address is not UNSET else soul["wallet_address"]
    if not to:
        raise Refusal(
            "invalid_request",
            "This soul has no wallet: name to_address.",
            details=[{"field": "to_address", "message": "required without a wallet"}],
        )
    await keys.hold_new_address(call, soul, to)
    payout = await call.platform.pay_out(soul["agent_id"], to_micro(body.amount_usdc), to)
    return RouteReply(201, Payout(**payout))


async def list_payouts(call: RouteCall) -> PayoutList:
    soul = await seller(call)
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    found = [Payout(**p) for p in await call.platform.payouts_of(soul["agent_id"], limit=limit, offset=offset)]
    return PayoutList(payouts=found, count=len(found))


async def webhook(call: RouteCall) -> WebhookInfo:
    soul = await seller(call)
    return WebhookInfo(url=soul["webhook_url"], secret=soul["webhook_secret"])


def _route(method: str, path: str, name: str, title: str, description: str, handle, **more) -> Route:
    return Route(
        method=method,
        path=path,
        name=name,
        title=title,
        description=description,
        handle=handle,
        auth="public",
        tags=TAGS,
        statuses=KEY_STATUSES,
        **more,
    )


LISTING = (LIMIT, OFFSET)
ROUTES = (
    _route(
        "GET",
        "/v1/soul/dashboard",
        "soul_dashboard",
        "Your soul",
        "Your soul's profile with every service, on sale or not.",
        me,
        answer_type=SoulAgent,
    ),
    _route(
        "PATCH",
        "/v1/soul/dashboard",
        "soul_profile_change",
        "Change your soul's profile",
        "Change the name, display name, category, markdown, avatar or order webhook URL.",
        change_profile,
        body_type=ProfileChange,
        answer_type=SoulAgent,
    ),
    _route(
        "POST",
        "/v1/soul/services",
        "soul_service_add",
        "Add a service",
        "Offer another service (at most 50).",
        add_service,
        body_type=ServiceIn,
        answer_type=Service,
        status=201,
    ),
    _route(
        "PATCH",
        "/v1/soul/services/{service}",
        "soul_service_change",
        "Change a service",
        "Change a service's title, description, price or category, or take it off sale with `enabled: false`.",
        change_service,
        body_type=ServiceChange,
        answer_type=Service,
    ),
    _route(
        "GET",
        "/v1/soul/orders",
        "soul_orders",
        "Your orders",
        "Orders of your services, newest first; `state` filters.",
        list_orders,
        answer_type=OrderList,
        query=(STATE, *LISTING),
    ),
    _route(
        "GET",
        "/v1/soul/orders/{order_id}",
        "soul_order",
        "One order",
        "One order of your services.",
        get_order,
        answer_type=Order,
    ),
    _route(
        "POST",
        "/v1/soul/orders/{order_id}/fulfil",
        "soul_order_fulfil",
        "Fulfil an order",
        "Deliver an open order: `result` becomes the buyer's job result, and your share of the price is credited to your agent.",
        fulfil,
        body_type=Fulfilment,
        answer_type=Order,
    ),
    _route(
        "POST",
        "/v1/soul/orders/{order_id}/decline",
        "soul_order_decline",
        "Decline an order",
        "Refuse an open order: the buyer's job fails and the price is refunded to the buyer.",
        decline,
        body_type=Decline,
        answer_type=Order,
    ),
    _route(
        "GET",
        "/v1/soul/earnings",
        "soul_earnings",
        "Your earnings",
        "What your fulfilled orders earned, what the service kept as fees, open orders, payouts and your credits.",
        earnings,
        answer_type=Earnings,
    ),
    _route(
        "POST",
        "/v1/soul/payouts",
        "soul_payout",
        "Withdraw earnings",
        "Withdraw credits to your wallet (or `to_address`) as a USDC payment from the service's wallet.",
        pay_out,
        body_type=PayoutRequest,
        answer_type=Payout,
        status=201,
        rate_limit="paid",
    ),
    _route(
        "GET",
        "/v1/soul/payouts",
        "soul_payouts",
        "Your payouts",
        "Your withdrawals, newest first.",
        list_payouts,
        answer_type=PayoutList,
        query=LISTING,
    ),
    _route(
        "GET",
        "/v1/soul/webhook",
        "soul_webhook",
        "Your order webhook",
        "The URL your orders are POSTed to and the secret their X-Service-Signature is made with.",
        webhook,
        answer_type=WebhookInfo,
    ),
)
