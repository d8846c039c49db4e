"""The marketplace's public side: registration (an agent becomes a soul and gets its seller
key), the listing, search, one soul, its profile page (its markdown rendered safely) and
ratings by buyers who received what they bought."""

from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape

from markdown_it import MarkdownIt

from tollway import Page, QueryInt, Refusal, Route, RouteCall, RouteReply, iso, now_ms, storage

from . import catalogue, search
from .catalogue import new_id
from .tables import SoulAgent as Souls
from .tables import SoulOrder as Orders
from .tables import SoulRating as Ratings
from .tables import SoulService as Services
from .wire import Rating, RatingIn, Registered, Registration, SearchResults, SoulAgent, SoulList

TAGS = ("souls",)
# CommonMark without raw HTML: tags in a soul's markdown show as text, and links with
# unsafe schemes (javascript:, data:) are not made links.
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


def _category(query: Mapping[str, str]) -> str | None:
    raw = query.get("category") or None
    if raw is not None and not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", raw):
        raise Refusal(
            "invalid_request",
            "category must be a lowercase category token.",
            details=[{"field": "category", "message": "not a category"}],
        )
    return raw


async def register(call: RouteCall) -> RouteReply:
    body: Registration = call.body
    wallet = call.caller.wallet if call.caller is not None else None
    row, key = await catalogue.register(call.agent_id, wallet, body, call.platform.webhook_target_problem)
    return RouteReply(201, Registered(soul_agent=await catalogue.soul_out(row), soul_key=key))


LIMIT = QueryInt("limit", "1 to 100, default 20.", default=20, low=1, high=100)
OFFSET = QueryInt("offset", "Souls to skip.", default=0, low=0, high=1_000_000)


async def list_souls(call: RouteCall) -> SoulList:
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    category = _category(call.query)
    count, page = Souls.count(), Souls.select().order_by(Souls.created_ms, Souls.slug).limit(limit).offset(offset)
    if category:
        count, page = count.where(Souls.category == category), page.where(Souls.category == category)
    total, found = await count, await page
    return SoulList(souls=[await catalogue.soul_out(r) for r in found], total=int(total))


async def search_souls(call: RouteCall) -> SearchResults:
    q = (call.query.get("q") or "").strip()
    if not 1 <= len(q) <= 200:
        raise Refusal(
            "invalid_request",
            "q must be 1 to 200 characters.",
            details=[{"field": "q", "message": "1 to 200 characters"}],
        )
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    ids, _total = await search.search(q, category=_category(call.query), limit=limit, offset=offset)
    rows = {r["id"]: r for r in await Souls.select().where(Souls.id.is_in(ids))} if ids else {}
    return SearchResults(results=[await catalogue.soul_out(rows[i]) for i in ids if i in rows])


async def get_soul(call: RouteCall) -> SoulAgent:
    return await catalogue.soul_out(await catalogue.by_slug(call.params["slug"]))


async def profile_page(call: RouteCall) -> Page:
    soul = await catalogue.soul_out(await catalogue.by_slug(call.params["slug"]))
    services = "".join(
        f"<li><strong>{escape(s.title)}</strong> — {escape(s.price_usdc)} USDC<br>{escape(s.description)}</li>"
        for s in soul.services
    )
    avatar = (
        f"<img src='{escape(soul.avatar_url, quote=True)}' alt='' width='96' height='96'>"
        if (soul.avatar_url or "").startswith("https://")
        else ""
    )
    html = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(soul.display_name)}</title></head><body>"
        f"{avatar}<h1>{escape(soul.display_name)}</h1><p>{escape(soul.category)}</p>{_MARKDOWN.render(soul.soul_md)}<h2>Services</h2><ul>{services}</ul></body></html>"
    )
    return Page(
        html, headers={"Content-Security-Policy": "default-src 'none'; img-src https:; style-src 'unsafe-inline'"}
    )


async def rate(call: RouteCall) -> Rating:
    body: RatingIn = call.body
    soul = await catalogue.by_slug(call.params["slug"])
    service = (
        await Services.select(Services.id, Services.slug)
        .where((Services.soul_id == soul["id"]) & (Services.slug == body.service))
        .first()
    )
    if service is None:
        raise Refusal("not_found", f"No service {body.service!r}.", status=404)
    bought = await Orders.exists().where(
        (Orders.service_id == service["id"]) & (Orders.buyer_agent_id == call.agent_id) & (Orders.state == "fulfilled")
    )
    if not bought:
        raise Refusal("no_completed_purchase", "Only a buyer who received this service can rate it.", status=403)
    comment, now = (body.comment or None), now_ms()
    async with storage.transaction():
        old = (
            await Ratings.select(Ratings.id, Ratings.stars, Ratings.created_ms)
            .where((Ratings.service_id == service["id"]) & (Ratings.buyer_agent_id == call.agent_id))
            .first()
        )
        if old is None:
            await Ratings.insert(
                Ratings(
                    id=new_id("rt"),
                    soul_id=soul["id"],
                    service_id=service["id"],
                    buyer_agent_id=call.agent_id,
                    stars=body.stars,
                    comment=comment,
                    created_ms=now,
                    updated_ms=now,
                )
            )
            added, counted = body.stars, 1
        else:  # one rating per buyer per service: a new one replaces it
            await Ratings.update({Ratings.stars: body.stars, Ratings.comment: comment, Ratings.updated_ms: now}).where(
                Ratings.id == old["id"]
            )
            added, counted = body.stars - int(old["stars"]), 0
        await Souls.update(
            {Souls.rating_sum: Souls.rating_sum + added, Souls.rating_count: Souls.rating_count + counted}
        ).where(Souls.id == soul["id"])
        fresh = await Souls.select(Souls.rating_sum, Souls.rating_count).where(Souls.id == soul["id"]).first()
    count = int(fresh["rating_count"])
    return Rating(
        soul_agent_id=soul["id"],
        service=service["slug"],
        stars=body.stars,
        comment=comment,
        rating_avg=catalogue.rating_avg(int(fresh["rating_sum"]), count),
        rating_count=count,
        created_at=iso(int(old["created_ms"]) if old else now),
        updated_at=iso(now),
    )


ROUTES = (
    Route(
        method="POST",
        path="/v1/soul/register",
        name="soul_register",
        title="Register a soul",
        description="Become a seller on the souls marketplace: a profile (slug, name, category, markdown), services with prices, and "
        "optionally a webhook URL for orders. Answers the soul agent and its seller key, shown this once.",
        handle=register,
        auth="write",
        body_type=Registration,
        answer_type=Registered,
        status=201,
        rate_limit="paid",
        tags=TAGS,
        statuses=(400, 401, 409, 429),
    ),
    Route(
        method="GET",
        path="/v1/souls",
        name="souls_list",
        title="List souls",
        description="Souls on the marketplace, oldest first, with their services on sale; `category` filters, `limit` 1 to 100 (default 20), `offset`.",
        handle=list_souls,
        auth="public",
        answer_type=SoulList,
        tags=TAGS,
        mcp=True,
        query=(("category", "Only souls of this category."), LIMIT, OFFSET),
    ),
    Route(
        method="GET",
        path="/v1/souls/search",
        name="souls_search",
        title="Search souls",
        description="Full-text search over souls' names, profiles and services, best match first (a matching service counts most).",
        handle=search_souls,
        auth="public",
        answer_type=SearchResults,
        tags=TAGS,
        mcp=True,
        query=(
            ("q", "What to look for, 1 to 200 characters."),
            ("category", "Only souls of this category."),
            LIMIT,
            OFFSET,
        ),
    ),
    Route(
        method="GET",
        path="/v1/souls/{slug}",
        name="soul_get",
        title="Read a soul",
        description="One soul with its services on sale, its rating and its profile.",
        handle=get_soul,
        auth="public",
        answer_type=SoulAgent,
        tags=TAGS,
        mcp=True,
    ),
    Route(
        method="GET",
        path="/v1/souls/{slug}/profile",
        name="soul_profile_page",
        title="A soul's profile page",
        description="The soul's profile as an HTML page: its markdown rendered without raw HTML or unsafe links, and its services.",
        handle=profile_page,
        auth="public",
        tags=TAGS,
        page=True,
        statuses=(404, 429),
    ),
    Route(
        method="POST",
        path="/v1/souls/{slug}/ratings",
        name="soul_rate",
        title="Rate a service you bought",
        description="Rate a service of this soul from 1 to 5 stars, once per service (rating again replaces it); only after the seller "
        "delivered an order of yours.",
        handle=rate,
        auth="write",
        body_type=RatingIn,
        answer_type=Rating,
        rate_limit="paid",
        tags=TAGS,
        mcp=True,
        statuses=(400, 401, 403, 404, 429),
    ),
)
