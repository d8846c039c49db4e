"""The operator's merchants, their product feeds read into the search index (with what
changed kept), and commerce_search over them, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime
import logging

from acp_merchant_standin import TOKEN
from buyer_support import OPERATOR, commerce_kernel, configure, merchant_body

from tollway import storage
from tollway.testing import count_receipts, credits_session, http_client
from tollway_commerce.buyer.tables import ProductChange


async def test_a_merchant_is_configured_listed_and_removed_and_its_secrets_never_answered(
    kernel_factory, merchant, caplog
):
    caplog.set_level(logging.DEBUG)
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        body = merchant_body(merchant, signing_key="sign-secret-123", webhook_secret="hook-secret-456")
        created = await client.post("/v1/tools/internal/merchants", json=body, headers=OPERATOR)
        assert created.status_code == 201, created.text
        again = await client.post("/v1/tools/internal/merchants", json=body, headers=OPERATOR)
        assert again.status_code == 200
        listed = await client.get("/v1/tools/internal/merchants", headers=OPERATOR)
        assert listed.json()["count"] == 1
        shown = listed.json()["merchants"][0]
        assert shown["acp_token_set"] and shown["signing_key_set"] and shown["webhook_secret_set"]
        assert shown["webhook_path"] == "/v1/commerce/merchants/shop/order-events"
        assert (await client.get("/v1/tools/internal/merchants")).status_code == 401
        for text in (created.text, again.text, listed.text):
            assert TOKEN not in text and "sign-secret-123" not in text and "hook-secret-456" not in text
        gone = await client.delete("/v1/tools/internal/merchants/shop", headers=OPERATOR)
        assert gone.json() == {"id": "shop", "deleted": True}
        assert (await client.delete("/v1/tools/internal/merchants/shop", headers=OPERATOR)).status_code == 404
    for record in caplog.records:
        message = record.getMessage()
        assert TOKEN not in message and "sign-secret-123" not in message and "hook-secret-456" not in message


async def test_the_feed_is_read_into_search_and_its_changes_are_kept(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    await storage.statement("DELETE FROM commerce_buyer_search").execute()
    async with http_client(kernel) as client:
        read = await configure(client, merchant)
        assert read["changes"] == len(merchant.catalogue)
        assert read["feed"]["products"] == len(merchant.catalogue) and read["feed"]["error"] is None
        _, auth = await credits_session(client, "1")
        found = await client.post("/v1/tools/commerce/search", json={"query": "cotton tee"}, headers=auth)
        assert found.status_code == 200, found.text
        data = found.json()["data"]
        products = data["result"]["products"]
        assert [p["product_id"] for p in products] == ["tee-red-m", "tee-blue-m"]  # title hits tie: cheaper first
        red = products[0]
        assert red["merchant"] == "shop" and red["title"] == "Classic Tee - Red / Medium"
        assert red["price"] == {"amount": 1999, "currency": "usd", "usdc": "19.990000"}
        assert red["available"] is True and red["availability"] == "in_stock"
        assert red["url"] == f"{merchant.url}/products/tee-red-m" and red["image_url"].endswith("/images/tee-red-m.jpg")
        assert red["feed_updated_at"] == "2026-11-27T12:00:00Z" and red["feed_read_at"]

        async def ids(**query):
            answer = await client.post("/v1/tools/commerce/search", json=query, headers=auth)
            assert answer.status_code == 200, answer.text
            return [p["product_id"] for p in answer.json()["data"]["result"]["products"]]

        assert await ids(query="tee", max_price_usdc="20") == ["tee-red-m"]
        assert await ids(query="tee", min_price_usdc="20.5") == ["tee-blue-m"]
        assert await ids(query="kettle") == ["kettle-gone"]
        assert await ids(query="kettle", in_stock=True) == []
        assert await ids(query="scarf") == ["scarf-eur"]
        assert await ids(query="wool", max_price_usdc="22") == ["scarf-eur"]  # 20.00 EUR at 1.10 = 22 USDC
        assert await ids(query="tea cup") == ["cup-jpy"]
        assert await ids(query="tea cup", max_price_usdc="1000") == []  # no JPY rate: no equivalent to compare
        assert await ids(query="tee", merchant="elsewhere") == []
        assert await ids(query="classi") == ["tee-red-m", "tee-blue-m"]  # the last word is a prefix
        cup = await client.post("/v1/tools/commerce/search", json={"query": "cup"}, headers=auth)
        assert cup.json()["data"]["result"]["products"][0]["price"] == {"amount": 1200, "currency": "jpy", "usdc": None}
        for hostile in ('"', "NEAR(", "a OR b", "'; DROP TABLE commerce_buyer_products; --", "tee*", "title: tee"):
            assert (
                await client.post("/v1/tools/commerce/search", json={"query": hostile}, headers=auth)
            ).status_code == 200

        # the merchant changes its catalogue: a price, a variant gone, one new
        merchant.catalogue["tee-red-m"].price = 1799
        del merchant.catalogue["mug"]
        from acp_merchant_standin import Item

        merchant.catalogue["socks"] = Item("Wool Socks", 900, description="Warm socks.")
        merchant.feed_updated_at = "2026-11-28T08:00:00Z"
        read = await client.post("/v1/tools/internal/merchants/shop/feed/read", headers=OPERATOR)
        assert read.json()["changes"] == 3
        changes = await ProductChange.select().where(ProductChange.feed_updated_at == "2026-11-28T08:00:00Z")
        seen = {(c["variant_id"], c["field"], c["before"], c["after"]) for c in changes}
        assert seen == {
            ("tee-red-m", "price_minor", "1999", "1799"),
            ("mug", "$entity", '"listed"', '"not_listed"'),
            ("socks", "$entity", None, '"listed"'),
        }
        assert await ids(query="mug") == []
        assert await ids(query="socks") == ["socks"]
        unchanged = await client.post("/v1/tools/internal/merchants/shop/feed/read", headers=OPERATOR)
        assert unchanged.json()["changes"] == 0
        # each search also recorded what it answered as facts: Changes shows the new price
        assert await ids(query="classic red") == ["tee-red-m"]
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        changes = await client.post(
            "/v1/tools/changes",
            json={"attribute": "commerce_search", "key": "shop|tee-red-m", "since": today},
            headers=auth,
        )
        assert changes.status_code == 200, changes.text
        rows = changes.json()["data"]["changes"]
        assert [(r["field"], r["before"], r["after"]) for r in rows] == [("price", 1999, 1799)]
        assert rows[0]["as_of"] == "2026-11-28T08:00:00Z"


async def test_a_bad_search_is_refused_before_payment(kernel_factory, merchant):
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        before = await count_receipts()
        bad = await client.post(
            "/v1/tools/commerce/search",
            json={"query": "tee", "min_price_usdc": "5", "max_price_usdc": "1"},
            headers=auth,
        )
        assert bad.status_code == 400, bad.text
        assert (await client.post("/v1/tools/commerce/search", json={"query": ""}, headers=auth)).status_code == 400
        assert await count_receipts() == before


async def test_the_periodic_task_reads_each_feed_once_per_interval_and_keeps_a_failure(kernel_factory, merchant):
    from buyer_support import merchant_body

    from tollway_commerce.buyer import FEED_TASK
    from tollway_commerce.buyer.tables import Merchant, Product

    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        body = merchant_body(merchant)
        assert (await client.post("/v1/tools/internal/merchants", json=body, headers=OPERATOR)).status_code == 201
        broken = {**merchant_body(merchant, "broken"), "feed_url": f"{merchant.url}/nothing-here"}
        assert (await client.post("/v1/tools/internal/merchants", json=broken, headers=OPERATOR)).status_code == 201
    await FEED_TASK.run(kernel.context)
    assert await Product.count().where(Product.merchant_id == "shop") == len(merchant.catalogue)
    failed = await Merchant.select().where(Merchant.id == "broken").first()
    assert failed["feed_error"].endswith("answered 404") and failed["feed_read_ms"] is None
    merchant.catalogue["tee-red-m"].price = 1
    await FEED_TASK.run(kernel.context)  # within TOLLWAY_COMMERCE_FEED_INTERVAL_S: not read again
    row = await Product.select(Product.price_minor).where(Product.id == "shop|tee-red-m").first()
    assert row["price_minor"] == 1999
