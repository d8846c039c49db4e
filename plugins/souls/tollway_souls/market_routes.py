"""The marketplace's public side: registration (an agent becomes a soul and gets its seller
key), the listing, search, one soul, its profile page (its markdown rendered safely) and
ratings by buyers who received what they bought."""
from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape

from markdown_it import MarkdownIt

from tollway import Page, QueryInt, Refusal, Route, RouteCall, RouteReply, iso, now_ms

from . import catalogue, db, search
from .catalogue import new_id
from .wire import Rating, RatingIn, Registered, Registration, SearchResults, SoulAgent, SoulList

TAGS = ("souls",)
# CommonMark without raw HTML: tags in a soul's markdown show as text, and links with
# unsafe schemes (javascript:, data:) are not made links.
_MARKDOWN = MarkdownIt("commonmark", {"html": False})



def _category(query: Mapping[str, str]) -> str | None:
    raw = query.get("category") or None
    if raw is not None and not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", raw):
        raise Refusal("invalid_request", "category must be a lowercase category token.", details=[{"field": "category", "message": "not a category"}])
    return raw


async def register(call: RouteCall) -> RouteReply:
    body: Registration = call.body
    wallet = call.caller.wallet if call.caller is not None else None
    row, key = await catalogue.register(call.agent_id, wallet, body, call.platform.webhook_target_problem)
    return RouteReply(201, Registered(soul_agent=await catalogue.soul_out(row), soul_key=key))


LIMIT = QueryInt("limit", "1 to 100, default 20.", default=20, low=1, high=100)
OFFSET = QueryInt("offset", "Souls to skip.", default=0, low=0, high=1_000_000)


# the listing's statements, with and without its category filter
_COUNT_ALL = "SELECT COUNT(*) AS n FROM souls_agents"
_COUNT_IN_CATEGORY = "SELECT COUNT(*) AS n FROM souls_agents WHERE category = {}"
_PAGE_ALL = "SELECT * FROM souls_agents ORDER BY created_ms, slug LIMIT {} OFFSET {}"
_PAGE_IN_CATEGORY = "SELECT * FROM souls_agents WHERE category = {} ORDER BY created_ms, slug LIMIT {} OFFSET {}"


async def list_souls(call: RouteCall) -> SoulList:
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    category = _category(call.query)
    if category:
        total = await db.row(_COUNT_IN_CATEGORY, category)
        found = await db.rows(_PAGE_IN_CATEGORY, category, limit, offset)
    else:
        total = await db.row(_COUNT_ALL)
        found = await db.rows(_PAGE_ALL, limit, offset)
    return SoulList(souls=[await catalogue.soul_out(r) for r in found], total=int(total["n"]))


async def search_souls(call: RouteCall) -> SearchResults:
    q = (call.query.get("q") or "").strip()
    if not 1 <= len(q) <= 200:
        raise Refusal("invalid_request", "q must be 1 to 200 characters.", details=[{"field": "q", "message": "1 to 200 characters"}])
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    ids, _total = await search.search(q, category=_category(call.query), limit=limit, offset=offset)
    rows = {r["id"]: r for r in await db.rows("SELECT * FROM souls_agents WHERE id IN (" + ", ".join("{}" for _ in ids) + ")", *ids)} if ids else {}
    return SearchResults(results=[await catalogue.soul_out(rows[i]) for i in ids if i in rows])


async def get_soul(call: RouteCall) -> SoulAgent:
    return await catalogue.soul_out(await catalogue.by_slug(call.params["slug"]))


async def profile_page(call: RouteCall) -> Page:
    soul = await catalogue.soul_out(await catalogue.by_slug(call.params["slug"]))
    services = "".join(
        f"<li><strong>{escape(s.title)}</strong> — {escape(s.price_usdc)} USDC<br>{escape(s.description)}</li>" for s in soul.services
    )
    avatar = f"<img src='{escape(soul.avatar_url, quote=True)}' alt='' width='96' height='96'>" if (soul.avatar_url or "").startswith("https://") else ""
    html = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(soul.display_name)}</title></head><body>"
        f"{avatar}<h1>{escape(soul.display_name)}</h1><p>{escape(soul.category)}</p>{_MARKDOWN.render(soul.soul_md)}<h2>Services</h2><ul>{services}</ul></body></html>"
    )
    return Page(html, headers={"Content-Security-Policy": "default-src 'none'; img-src https:; style-src 'unsafe-inline'"})


async def rate(call: RouteCall) -> Rating:
    body: RatingIn = call.body
    soul = await catalogue.by_slug(call.params["slug"])
    service = await db.row("SELECT id, slug FROM souls_services WHERE soul_id = {} AND slug = {}", soul["id"], body.service)
    if service is None:
        raise Refusal("not_found", f"No service {body.service!r}.", status=404)
    bought = await db.row(
        "SELECT id FROM souls_orders WHERE service_id = {} AND buyer_agent_id = {} AND state = 'fulfilled'", service["id"], call.agent_id,
    )
    if bought is None:
        raise Refusal("no_completed_purchase", "Only a buyer who received this service can rate it.", status=403)
    comment, now = (body.comment or None), now_ms()
    async with db.transaction():
        old = await db.row("SELECT id, stars, created_ms FROM souls_ratings WHERE service_id = {} AND buyer_agent_id = {}", service["id"], call.agent_id)
        if old is None:
            await db.rows(
                "INSERT INTO souls_ratings (id, soul_id, service_id, buyer_agent_id, stars, comment, created_ms, updated_ms) VALUES ({}, {}, {}, {}, {}, {}, {}, {})",
                new_id("rt"), soul["id"], service["id"], call.agent_id, body.stars, comment, now, now,
            )
            await db.rows("UPDATE souls_agents SET rating_sum = rating_sum + {}, rating_count = rating_count + 1 WHERE id = {}", body.stars, soul["id"])
        else:  # one rating per buyer per service: a new one replaces it
            await db.rows("UPDATE souls_ratings SET stars = {}, comment = {}, updated_ms = {} WHERE id = {}", body.stars, comment, now, old["id"])
            await db.rows("UPDATE souls_agents SET rating_sum = rating_sum + {} WHERE id = {}", body.stars - int(old["stars"]), soul["id"])
        fresh = await db.row("SELECT rating_sum, rating_count FROM souls_agents WHERE id = {}", soul["id"])
    count = int(fresh["rating_count"])
    return Rating(
        soul_agent_id=soul["id"], service=service["slug"], stars=body.stars, comment=comment, rating_avg=catalogue.rating_avg(int(fresh["rating_sum"]), count),
        rating_count=count, created_at=iso(int(old["created_ms"]) if old else now), updated_at=iso(now),
    )


ROUTES = (
    Route(method="POST", path="/v1/soul/register", name="soul_register", title="Register a soul",
          description="Become a seller on the souls marketplace: a profile (slug, name, category, markdown), services with prices, and "
          "optionally a webhook URL for orders. Answers the soul agent and its seller key, shown this once.",
          handle=register, auth="write", body_type=Registration, answer_type=Registered, status=201, rate_limit="paid", tags=TAGS,
          statuses=(400, 401, 409, 429)),
    Route(method="GET", path="/v1/souls", name="souls_list", title="List souls",
          description="Souls on the marketplace, oldest first, with their services on sale; `category` filters, `limit` 1 to 100 (default 20), `offset`.",
          handle=list_souls, auth="public", answer_type=SoulList, tags=TAGS, mcp=True,
          query=(("category", "Only souls of this category."), LIMIT, OFFSET)),
    Route(method="GET", path="/v1/souls/search", name="souls_search", title="Search souls",
          description="Full-text search over souls' names, profiles and services, best match first (a matching service counts most).",
          handle=search_souls, auth="public", answer_type=SearchResults, tags=TAGS, mcp=True,
          query=(("q", "What to look for, 1 to 200 characters."), ("category", "Only souls of this category."),
                 LIMIT, OFFSET)),
    Route(method="GET", path="/v1/souls/{slug}", name="soul_get", title="Read a soul", description="One soul with its services on sale, its rating and its profile.",
          handle=get_soul, auth="public", answer_type=SoulAgent, tags=TAGS, mcp=True),
    Route(method="GET", path="/v1/souls/{slug}/profile", name="soul_profile_page", title="A soul's profile page",
          description="The soul's profile as an HTML page: its markdown rendered without raw HTML or unsafe links, and its services.",
          handle=profile_page, auth="public", tags=TAGS, page=True, statuses=(404, 429)),
    Route(method="POST", path="/v1/souls/{slug}/ratings", name="soul_rate", title="Rate a service you bought",
          description="Rate a service of this soul from 1 to 5 stars, once per service (rating again replaces it); only after the seller "
          "delivered an order of yours.",
          handle=rate, auth="write", body_type=RatingIn, answer_type=Rating, rate_limit="paid", tags=TAGS, mcp=True,
          statuses=(400, 401, 403, 404, 429)),
)
