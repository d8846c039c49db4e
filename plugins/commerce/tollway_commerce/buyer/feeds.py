"""Reading the merchants' product feeds into the products table and its search index.

A feed is ACP's offline full snapshot (rfc.product_feeds §3.4): `<feed_url>/metadata.json`
(FeedMetadata: `id`, `target_country`, `updated_at`) and `<feed_url>/products.jsonl` (one
Product per line, each with its Variants). A merchant that publishes no `metadata.json`
(404) is read in the shape of the RFC's product-set read instead: `<feed_url>` answers the
FeedMetadata and `<feed_url>/products` `{"products": [...]}` (a Tollway merchant publishes
its catalogue so, at /v1/commerce/feed). We never call the agent-hosted Product Feed API's
management endpoints on a merchant (the RFC forbids it); the operator points `feed_url` at
where the merchant publishes its catalogue. Each variant is one searchable
product (the variant id is the checkout item id). A read replaces the merchant's whole
product set: variants missing from it are gone. Every difference from the previous read is
kept in commerce_buyer_product_changes (a variant listed or no longer listed, and each field that
changed, before and after), in the read's transaction."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from tollway import PluginContext, now_ms, storage

from . import money, search
from .settings import FAMILY, feed_interval_ms
from .tables import Merchant, Product, ProductChange

log = logging.getLogger(__name__)

MAX_FEED_BYTES = 50_000_000
MAX_VARIANTS = 100_000
TIMEOUT_S = 30.0
FIELDS = (
    "product_id",
    "title",
    "description",
    "url",
    "image_url",
    "price_minor",
    "currency",
    "available",
    "availability",
    "seller",
)


class FeedError(Exception):
    """Why a feed could not be read (kept on the merchant as `feed_error`)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Read:
    feed_id: str | None
    updated_at: str | None
    variants: dict[str, dict[str, Any]]  # variant id -> the row's FIELDS


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _plain(description: object) -> str:
    """The plain text of a feed description (`{plain, html, markdown}` or a string); never HTML."""
    if isinstance(description, str):
        return description
    if isinstance(description, Mapping):
        return _text(description.get("plain")) or _text(description.get("markdown")) or ""
    return ""


def _image(media: object) -> str | None:
    if isinstance(media, list):
        for m in media:
            if isinstance(m, Mapping) and m.get("type", "image") == "image" and _text(m.get("url")):
                return str(m["url"])
    return None


def variant_rows(product: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A feed Product's variants as product rows, by variant id (a variant without id or title is skipped)."""
    rows: dict[str, dict[str, Any]] = {}
    product_id = _text(product.get("id"))
    variants = product.get("variants")
    if product_id is None or not isinstance(variants, list):
        return rows
    for variant in variants:
        if not isinstance(variant, Mapping):
            continue
        variant_id, title = _text(variant.get("id")), _text(variant.get("title")) or _text(product.get("title"))
        if variant_id is None or title is None:
            continue
        price = variant.get("price") if isinstance(variant.get("price"), Mapping) else {}
        amount = price.get("amount")
        currency = _text(price.get("currency"))
        availability = variant.get("availability") if isinstance(variant.get("availability"), Mapping) else {}
        seller = variant.get("seller") if isinstance(variant.get("seller"), Mapping) else {}
        priced = isinstance(amount, int) and not isinstance(amount, bool) and amount >= 0 and currency is not None
        rows[variant_id] = {
            "product_id": product_id,
            "title": title[:1000],
            "description": (_plain(variant.get("description")) or _plain(product.get("description")))[:10_000],
            "url": _text(variant.get("url")) or _text(product.get("url")),
            "image_url": _image(variant.get("media")) or _image(product.get("media")),
            "price_minor": amount if priced else None,
            "currency": currency.lower()[:3] if priced and currency else None,
            "available": availability.get("available") is True,
            "availability": _text(availability.get("status")),
            "seller": _text(seller.get("name")),
        }
    return rows


def _headers(merchant: Mapping[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {merchant['acp_token']}", "API-Version": merchant["api_version"]}


async def _get(http: httpx.AsyncClient, url: str, headers: Mapping[str, str]) -> bytes:
    try:
        async with http.stream("GET", url, headers=headers, timeout=TIMEOUT_S, follow_redirects=False) as reply:
            if reply.status_code != 200:
                raise FeedError(f"GET {url} answered {reply.status_code}", reply.status_code)
            body = bytearray()
            async for chunk in reply.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_FEED_BYTES:
                    raise FeedError(f"GET {url} is larger than {MAX_FEED_BYTES} bytes")
            return bytes(body)
    except httpx.HTTPError as exc:
        raise FeedError(f"GET {url} failed: {type(exc).__name__}") from exc


def _json(raw: bytes, what: str) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise FeedError(f"{what} is not JSON") from exc


async def fetch(http: httpx.AsyncClient, merchant: Mapping[str, Any]) -> Read:
    base = str(merchant["feed_url"]).rstrip("/")
    headers = _headers(merchant)
    try:
        metadata = _json(await _get(http, f"{base}/metadata.json", headers), "metadata.json")
        products: list[Any] = []
        for n, line in enumerate((await _get(http, f"{base}/products.jsonl", headers)).splitlines(), start=1):
            if line.strip():
                products.append(_json(line, f"products.jsonl line {n}"))
    except FeedError as exc:
        if exc.status != 404:
            raise
        metadata = _json(await _get(http, base, headers), "the feed's metadata")
        listed = _json(await _get(http, f"{base}/products", headers), "the feed's products")
        products = listed.get("products") if isinstance(listed, dict) else None
        if not isinstance(products, list):
            raise FeedError("the feed's products are not a {products: [...]} object") from exc
    if not isinstance(metadata, dict):
        raise FeedError("the feed's metadata is not a FeedMetadata object")
    variants: dict[str, dict[str, Any]] = {}
    for product in products:
        if isinstance(product, dict):
            variants.update(variant_rows(product))
        if len(variants) > MAX_VARIANTS:
            raise FeedError(f"the feed lists more than {MAX_VARIANTS} variants")
    return Read(_text(metadata.get("id")), _text(metadata.get("updated_at")), variants)


def _digest(row: Mapping[str, Any]) -> str:
    return hashlib.sha256(storage.dumps([row.get(f) for f in FIELDS]).encode()).hexdigest()


def _change(merchant_id: str, variant_id: str, field: str, before: object, after: object, feed: Read, now: int) -> Any:
    return ProductChange(
        id="pch_" + secrets.token_hex(12),
        merchant_id=merchant_id,
        variant_id=variant_id,
        field=field,
        before=None if before is None else storage.dumps(before),
        after=None if after is None else storage.dumps(after),
        feed_updated_at=feed.updated_at,
        changed_ms=now,
    )


async def apply(merchant_id: str, feed: Read, settings: Mapping[str, str]) -> int:
    """Replace a merchant's products with what the feed lists, keeping what changed; how many changes."""
    table = money.rates(settings)
    now = now_ms()
    changes: list[Any] = []
    async with storage.transaction():
        known = {
            r["variant_id"]: r
            for r in await storage.lock_rows(Product.select().where(Product.merchant_id == merchant_id))
        }
        for variant_id, row in feed.variants.items():
            key = f"{merchant_id}|{variant_id}"
            digest = _digest(row)
            before = known.pop(variant_id, None)
            usdc = None if row["price_minor"] is None else money.to_usdc(row["price_minor"], row["currency"], table)
            if before is None:
                changes.append(_change(merchant_id, variant_id, "$entity", None, "listed", feed, now))
            elif before["digest"] == digest and before["usdc_micro"] == usdc:
                continue
            else:
                changes.extend(
                    _change(merchant_id, variant_id, f, before[f], row[f], feed, now)
                    for f in FIELDS
                    if before[f] != row[f]
                )
                await Product.delete().where(Product.id == key)
            await Product.insert(
                Product(
                    id=key,
                    merchant_id=merchant_id,
                    variant_id=variant_id,
                    usdc_micro=usdc,
                    digest=digest,
                    updated_ms=now,
                    **row,
                )
            )
            await search.index(key, row["title"], row["description"])
        for variant_id in known:
            key = f"{merchant_id}|{variant_id}"
            changes.append(_change(merchant_id, variant_id, "$entity", "listed", "not_listed", feed, now))
            await Product.delete().where(Product.id == key)
            await search.drop(key)
        if changes:
            await ProductChange.insert(*changes)
        await Merchant.update(
            {
                Merchant.feed_id: feed.feed_id,
                Merchant.feed_updated_at: feed.updated_at,
                Merchant.feed_read_ms: now,
                Merchant.feed_tried_ms: now,
                Merchant.feed_error: None,
                Merchant.products: len(feed.variants),
            }
        ).where(Merchant.id == merchant_id)
    return len(changes)


async def refresh(http: httpx.AsyncClient, settings: Mapping[str, str], merchant_id: str) -> int:
    """Read one merchant's feed now; how many changes it found. A failure is kept on the merchant and raised."""
    merchant = await Merchant.select().where(Merchant.id == merchant_id).first()
    if merchant is None:
        raise FeedError(f"no merchant {merchant_id!r}")
    try:
        feed = await fetch(http, merchant)
    except FeedError as exc:
        await Merchant.update({Merchant.feed_tried_ms: now_ms(), Merchant.feed_error: str(exc)}).where(
            Merchant.id == merchant_id
        )
        raise
    return await apply(merchant_id, feed, settings)


async def refresh_due(context: PluginContext) -> None:
    """The periodic task: read every merchant's feed whose last attempt is older than the interval."""
    interval = feed_interval_ms(context.settings(FAMILY))
    now = now_ms()
    for merchant in await Merchant.select(Merchant.id, Merchant.feed_tried_ms).order_by(Merchant.id):
        tried = merchant["feed_tried_ms"]
        if tried is not None and now - int(tried) < interval:
            continue
        try:
            await refresh(context.http, context.settings(FAMILY), merchant["id"])
        except FeedError as exc:
            log.warning("commerce feed of merchant %s: %s", merchant["id"], exc)
