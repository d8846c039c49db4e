"""`commerce_search` (POST /v1/tools/commerce/search): products of the configured merchants'
feeds, found by words and filtered by merchant, USDC price range and stock, each with its
price in the merchant's currency, its USDC equivalent and how fresh the feed is. Feed
prices are what the merchant last published, not a quote: the checkout's total decides."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tollway import Evidence, Example, Fact, FieldError, HistoryDeclaration, Tool, ToolContext, iso, to_micro, usdc

from . import search
from .settings import FAMILY, SEARCH_PRICE
from .tables import Merchant, Product
from .wire import CommercePrice, CommerceProduct, CommerceSearchAnswer, CommerceSearchInput, CommerceSearchResult

SOURCE = "ACP merchant product feeds"


def check(value: CommerceSearchInput) -> None:
    low = None if value.min_price_usdc is None else to_micro(value.min_price_usdc)
    high = None if value.max_price_usdc is None else to_micro(value.max_price_usdc)
    if low is not None and high is not None and low > high:
        raise FieldError("min_price_usdc", "must not be above max_price_usdc")


def price_of(row: dict[str, Any]) -> CommercePrice | None:
    if row["price_minor"] is None or row["currency"] is None:
        return None
    equivalent = row["usdc_micro"]
    return CommercePrice(
        amount=int(row["price_minor"]),
        currency=row["currency"],
        usdc=None if equivalent is None else usdc(int(equivalent)),
    )


def facts(value: CommerceSearchInput, answer: CommerceSearchAnswer) -> Iterable[Fact]:
    """What each product answered states, for Changes: keyed `<merchant>|<product_id>`, dated by
    the merchant's feed (the feed reader also keeps every change it reads: docs/commerce.md)."""
    for p in answer.result.products:
        yield Fact(
            attribute="commerce_search",
            key=f"{p.merchant}|{p.product_id}",
            value={
                "title": p.title,
                "price": None if p.price is None else p.price.amount,
                "currency": None if p.price is None else p.price.currency,
                "available": p.available,
                "availability": p.availability,
            },
            source=SOURCE,
            as_of=p.feed_updated_at,
        )


async def run(value: CommerceSearchInput, ctx: ToolContext) -> CommerceSearchAnswer:
    keys, total = await search.search(
        value.query,
        merchant=value.merchant,
        in_stock=value.in_stock,
        min_usdc=None if value.min_price_usdc is None else to_micro(value.min_price_usdc),
        max_usdc=None if value.max_price_usdc is None else to_micro(value.max_price_usdc),
        limit=value.limit,
        offset=value.offset,
    )
    rows = {r["id"]: r for r in await Product.select().where(Product.id.is_in(keys))} if keys else {}
    merchants = {
        r["id"]: r
        for r in await Merchant.select(Merchant.id, Merchant.name, Merchant.feed_updated_at, Merchant.feed_read_ms)
    }
    products = []
    for key in keys:
        row = rows.get(key)
        if row is None:
            continue  # removed by a feed read between the two reads
        merchant = merchants.get(row["merchant_id"], {})
        read_ms = merchant.get("feed_read_ms")
        products.append(
            CommerceProduct(
                merchant=row["merchant_id"],
                merchant_name=merchant.get("name", row["merchant_id"]),
                product_id=row["variant_id"],
                group_id=row["product_id"],
                title=row["title"],
                description=row["description"],
                price=price_of(row),
                available=bool(row["available"]),
                availability=row["availability"],
                url=row["url"],
                image_url=row["image_url"],
                seller=row["seller"],
                feed_updated_at=merchant.get("feed_updated_at"),
                feed_read_at=None if read_ms is None else iso(int(read_ms)),
            )
        )
    reads = [int(m["feed_read_ms"]) for m in merchants.values() if m["feed_read_ms"] is not None]
    return CommerceSearchAnswer(
        result=CommerceSearchResult(products=products, total=total),
        evidence=Evidence.now(SOURCE, as_of=iso(min(reads)) if reads else None, source_kind="commercial"),
    )


SEARCH = Tool(
    name="commerce_search",
    path="/v1/tools/commerce/search",
    title="Search products of ACP merchants",
    summary="Finds products in the product feeds of the merchants this service buys from.",
    description=(
        "Searches the product feeds of the ACP merchants this service is configured to buy from: every word of "
        "`query` must appear in a product's title or description (the last word may be the start of one). Filter by "
        "merchant, by price range in USDC (the USDC equivalent of the feed price: USD 1:1, other currencies at the "
        "operator's rates; products without an equivalent are left out when a price bound is given) and by stock. "
        "Each product carries its price in minor units of its currency, its USDC equivalent, availability, URL, "
        "image and when the merchant's feed was updated and read. Feed prices are not quotes: commerce_buy checks "
        "the merchant's checkout total against your cap. Pass `product_id` and `merchant` to commerce_buy."
    ),
    category="commerce",
    subcategory="search",
    input_type=CommerceSearchInput,
    output_type=CommerceSearchAnswer,
    run=run,
    price=SEARCH_PRICE,
    family=FAMILY,
    rate_limit="paid",
    check=check,
    history=HistoryDeclaration(facts=facts),
    time_limit_s=15.0,
    examples=(
        Example(
            "Red cotton tees under 25 USDC, in stock",
            {"query": "red cotton tee", "max_price_usdc": "25", "in_stock": True},
        ),
    ),
)
