"""The operator's merchants (`/v1/tools/internal/merchants`, operator token): the ACP merchants
agents may buy from. The ACP token, signing key and webhook secret are stored to be used and
never answered back (an answer says only whether each is set); nothing here logs them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from tollway import Refusal, Route, RouteCall, RouteReply, iso, now_ms, storage

from . import discovery, feeds, search
from .settings import FAMILY
from .tables import Merchant, Product
from .wire import (
    CommerceFeedRead,
    CommerceFeedState,
    CommerceMerchant,
    CommerceMerchantDeleted,
    CommerceMerchantIn,
    CommerceMerchantList,
)

PATH = "/v1/tools/internal/merchants"
WEBHOOK_PATH = "/v1/commerce/merchants/{merchant_id}/order-events"
TAGS = ("operator",)
MERCHANT_ID = (("merchant_id", "The merchant's id, as the operator named it."),)


def _time(ms: object) -> str | None:
    return None if ms is None else iso(int(ms))  # type: ignore[call-overload]


def feed_state(row: Mapping[str, Any]) -> CommerceFeedState:
    return CommerceFeedState(
        feed_id=row["feed_id"],
        updated_at=row["feed_updated_at"],
        read_at=_time(row["feed_read_ms"]),
        tried_at=_time(row["feed_tried_ms"]),
        error=row["feed_error"],
        products=int(row["products"] or 0),
    )


def merchant_out(row: Mapping[str, Any]) -> CommerceMerchant:
    return CommerceMerchant(
        id=row["id"],
        name=row["name"],
        base_url=row["base_url"],
        feed_url=row["feed_url"],
        api_version=row["api_version"],
        acp_token_set=bool(row["acp_token"]),
        signing_key_set=bool(row["signing_key"]),
        webhook_secret_set=bool(row["webhook_secret"]),
        webhook_path=WEBHOOK_PATH.replace("{merchant_id}", row["id"]),
        feed=feed_state(row),
        created_at=iso(int(row["created_ms"])),
        updated_at=iso(int(row["updated_ms"])),
    )


async def put(call: RouteCall) -> RouteReply:
    body: CommerceMerchantIn = call.body
    async with httpx.AsyncClient() as http:  # a route gets no shared HTTP client
        found = await discovery.resolve(http, body)
    now = now_ms()
    fields = {
        Merchant.name: body.name,
        Merchant.base_url: found.base_url,
        Merchant.feed_url: found.feed_url,
        Merchant.acp_token: body.acp_token,
        Merchant.api_version: found.api_version,
        Merchant.signing_key: body.signing_key,
        Merchant.webhook_secret: body.webhook_secret,
        Merchant.updated_ms: now,
    }
    async with storage.transaction():
        replaced = await Merchant.update(fields).where(Merchant.id == body.id).returning(Merchant.id)
        if not replaced:
            await Merchant.insert(
                Merchant(**{column._meta.name: v for column, v in fields.items()}, id=body.id, created_ms=now)
            )
    row = await Merchant.select().where(Merchant.id == body.id).first()
    return RouteReply(200 if replaced else 201, merchant_out(row))


async def listing(call: RouteCall) -> CommerceMerchantList:
    rows = await Merchant.select().order_by(Merchant.id)
    return CommerceMerchantList(merchants=[merchant_out(r) for r in rows], count=len(rows))


async def _merchant(call: RouteCall) -> dict[str, Any]:
    row = await Merchant.select().where(Merchant.id == call.params["merchant_id"]).first()
    if row is None:
        raise Refusal("not_found", f"No merchant {call.params['merchant_id']!r}.", status=404)
    return row


async def delete(call: RouteCall) -> CommerceMerchantDeleted:
    """The merchant and its products go; its orders stay (they are the agents' records)."""
    row = await _merchant(call)
    async with storage.transaction():
        for product in await Product.select(Product.id).where(Product.merchant_id == row["id"]):
            await search.drop(product["id"])
        await Product.delete().where(Product.merchant_id == row["id"])
        await Merchant.delete().where(Merchant.id == row["id"])
    return CommerceMerchantDeleted(id=row["id"], deleted=True)


async def read_feed(call: RouteCall) -> CommerceFeedRead:
    """Read the feed now, with a client of its own (a route gets no shared HTTP client)."""
    row = await _merchant(call)
    settings = call.platform.settings(FAMILY) if call.platform is not None else {}
    try:
        async with httpx.AsyncClient() as http:
            changes = await feeds.refresh(http, settings, row["id"])
    except feeds.FeedError as exc:
        raise Refusal("feed_unreadable", f"The feed could not be read: {exc}.", status=502) from exc
    return CommerceFeedRead(id=row["id"], changes=changes, feed=feed_state(await _merchant(call)))


ROUTES = (
    Route(
        method="POST",
        path=PATH,
        name="operator_commerce_merchant_put",
        title="Configure an ACP merchant",
        description="Creates (201) or replaces (200) a merchant agents may buy from: its ACP API base, product "
        "feed, the ACP token it issued, API version and optional signing key and webhook secret. Given only its "
        "origin (or no feed_url), the rest is read from its ACP discovery document (/.well-known/acp.json); "
        "502 when that cannot be read. Secrets are never answered back.",
        handle=put,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        body_type=CommerceMerchantIn,
        answer_type=CommerceMerchant,
        status=201,
        also_answers=((200, "Replaced: the merchant existed."),),
        statuses=(400, 401, 502),
    ),
    Route(
        method="GET",
        path=PATH,
        name="operator_commerce_merchant_list",
        title="List the ACP merchants",
        description="Every configured merchant with its feed's state; secrets are never shown.",
        handle=listing,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        answer_type=CommerceMerchantList,
        statuses=(401,),
    ),
    Route(
        method="DELETE",
        path=f"{PATH}/{{merchant_id}}",
        name="operator_commerce_merchant_delete",
        title="Remove an ACP merchant",
        description="Removes the merchant and its products from search; orders placed with it are kept.",
        handle=delete,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        answer_type=CommerceMerchantDeleted,
        param_docs=MERCHANT_ID,
        statuses=(401, 404),
    ),
    Route(
        method="POST",
        path=f"{PATH}/{{merchant_id}}/feed/read",
        name="operator_commerce_merchant_feed_read",
        title="Read a merchant's product feed now",
        description="Reads the merchant's product feed at once (the periodic task does it every "
        "TOLLWAY_COMMERCE_FEED_INTERVAL_S) and answers how many changes it found.",
        handle=read_feed,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        answer_type=CommerceFeedRead,
        param_docs=MERCHANT_ID,
        statuses=(401, 404, 502),
    ),
)
