"""Soul agents and their services: registration (the soul key made and only its hash kept),
profile and service changes, and the resources as served (public views show enabled
services only; the seller's own view shows all)."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from msgspec import UNSET

from tollway import Refusal, iso, now_ms, storage, to_micro, usdc

from . import search
from .tables import SoulAgent as Souls
from .tables import SoulService as Services
from .wire import Registration, Service, ServiceChange, ServiceIn, SoulAgent

KEY_PREFIX = "soul_"
RESERVED_SLUGS = frozenset({"search"})  # path words beside /v1/souls/{slug}
MIN_PRICE, MAX_PRICE = 10_000, 1_000_000_000  # 0.01 to 1000 USDC


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def new_key() -> str:
    """A soul key (shown once; only its `key_hash` is kept)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def price_of(text: str, field: str) -> int:
    micro = to_micro(text)
    if not MIN_PRICE <= micro <= MAX_PRICE:
        raise Refusal(
            "invalid_request",
            f"{field} must be from 0.01 to 1000 USDC.",
            details=[{"field": field, "message": "must be from 0.01 to 1000"}],
        )
    return micro


def rating_avg(rating_sum: int, count: int) -> float | None:
    """The average stars, to two decimals; None before the first rating."""
    return round(rating_sum / count, 2) if count else None


def service_out(row: dict[str, Any]) -> Service:
    return Service(
        id=row["id"],
        slug=row["slug"],
        title=row["title"],
        description=row["description"],
        price_usdc=usdc(int(row["price"])),
        category=row["category"],
        enabled=bool(row["enabled"]),
        created_at=iso(int(row["created_ms"])),
    )


async def services_of(soul_id: str, *, enabled_only: bool) -> list[dict[str, Any]]:
    query = Services.select().where(Services.soul_id == soul_id)
    if enabled_only:
        query = query.where(Services.enabled == True)  # noqa: E712 (a column comparison)
    return await query.order_by(Services.created_ms, Services.slug)


async def soul_out(row: dict[str, Any], *, enabled_only: bool = True) -> SoulAgent:
    services = await services_of(row["id"], enabled_only=enabled_only)
    prices = [int(s["price"]) for s in services if s["enabled"]]
    count = int(row["rating_count"])
    return SoulAgent(
        id=row["id"],
        wallet_address=row["wallet_address"],
        slug=row["slug"],
        name=row["name"],
        display_name=row["display_name"],
        category=row["category"],
        soul_md=row["soul_md"],
        soul_price_usdc=usdc(min(prices)) if prices else None,
        avatar_url=row["avatar_url"],
        rating_avg=rating_avg(int(row["rating_sum"]), count),
        rating_count=count,
        services=[service_out(s) for s in services],
        created_at=iso(int(row["created_ms"])),
    )


async def by_slug(slug: str) -> dict[str, Any]:
    row = await Souls.select().where(Souls.slug == slug).first()
    if row is None:
        raise Refusal("not_found", f"No soul {slug!r}.", status=404)
    return row


def _check_services(services: list[ServiceIn], prefix: str = "services") -> None:
    problems, seen = [], set()
    for i, s in enumerate(services):
        try:
            price_of(s.price_usdc, f"{prefix}[{i}].price_usdc")
        except Refusal as exc:
            problems += exc.details or []
        if s.slug in seen:
            problems.append({"field": f"{prefix}[{i}].slug", "message": f"the slug {s.slug!r} is used twice"})
        seen.add(s.slug)
    if problems:
        raise Refusal(
            "invalid_request",
            "Some services are invalid: " + "; ".join(f"{p['field']}: {p['message']}" for p in problems) + ".",
            details=problems,
        )


async def add_service(soul_id: str, s: ServiceIn, *, position: int = 0) -> dict[str, Any]:
    now = now_ms() + position  # services registered together keep the order they were given in
    sid = new_id("svc")
    if await Services.exists().where((Services.soul_id == soul_id) & (Services.slug == s.slug)):
        raise Refusal("slug_taken", f"This soul already has a service {s.slug!r}.", status=409)
    await Services.insert(
        Services(
            id=sid,
            soul_id=soul_id,
            slug=s.slug,
            title=s.title,
            description=s.description,
            price=price_of(s.price_usdc, "price_usdc"),
            category=s.category,
            enabled=s.enabled,
            created_ms=now,
            updated_ms=now,
        )
    )
    return await service(sid)


async def service(service_id: str) -> dict[str, Any]:
    return await Services.select().where(Services.id == service_id).first()


async def soul(soul_id: str) -> dict[str, Any] | None:
    return await Souls.select().where(Souls.id == soul_id).first()


async def register(
    agent_id: str, wallet: str | None, body: Registration, webhook_problem: Any
) -> tuple[dict[str, Any], str]:
    """Create the soul of `agent_id`; (its row, the soul key shown once)."""
    if body.slug in RESERVED_SLUGS:
        raise Refusal(
            "invalid_request",
            f"The slug {body.slug!r} is reserved.",
            details=[{"field": "slug", "message": "reserved"}],
        )
    _check_services(body.services)
    webhook_url = body.webhook_url or None
    if webhook_url and (problem := webhook_problem(webhook_url)):
        raise Refusal(
            "invalid_request", f"webhook_url: {problem}.", details=[{"field": "webhook_url", "message": problem}]
        )
    key = new_key()
    soul_id, now = new_id("sa"), now_ms()
    async with storage.transaction():
        if await Souls.exists().where(Souls.agent_id == agent_id):
            raise Refusal("already_registered", "This agent already has a soul; its seller key manages it.", status=409)
        if await Souls.exists().where(Souls.slug == body.slug):
            raise Refusal(
                "slug_taken",
                f"The slug {body.slug!r} is taken.",
                status=409,
                details=[{"field": "slug", "message": "taken"}],
            )
        await Souls.insert(
            Souls(
                id=soul_id,
                agent_id=agent_id,
                wallet_address=wallet,
                slug=body.slug,
                name=body.name,
                display_name=body.display_name or body.name,
                category=body.category,
                soul_md=body.soul_md,
                avatar_url=body.avatar_url or None,
                key_hash=key_hash(key),
                key_rotated_ms=None,
                key_revoked_ms=None,
                webhook_url=webhook_url,
                webhook_secret=secrets.token_urlsafe(32) if webhook_url else None,
                rating_sum=0,
                rating_count=0,
                created_ms=now,
                updated_ms=now,
            )
        )
        for i, s in enumerate(body.services):
            await add_service(soul_id, s, position=i)
        await search.reindex(soul_id)
    return await soul(soul_id), key


async def change_service(soul_id: str, slug: str, change: ServiceChange) -> dict[str, Any]:
    row = await Services.select().where((Services.soul_id == soul_id) & (Services.slug == slug)).first()
    if row is None:
        raise Refusal("not_found", f"No service {slug!r}.", status=404)
    values = {
        k: v
        for k, v in (
            ("title", change.title),
            ("description", change.description),
            ("category", change.category),
            ("enabled", change.enabled),
        )
        if v is not UNSET
    }
    if change.price_usdc is not UNSET:
        values["price"] = price_of(change.price_usdc, "price_usdc")
    async with storage.transaction():
        if values:
            await Services.update({**values, "updated_ms": now_ms()}).where(Services.id == row["id"])
        await search.reindex(soul_id)
    return await service(row["id"])
