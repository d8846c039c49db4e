"""The buyer side's tables (Piccolo app `commerce_buyer`): the merchants the operator
configured, the products their feeds list (and the changes each read of a feed found),
and the orders agents placed through `commerce_buy`. Money in micro-USDC unless a column
says minor units; times in unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.table import Table


class Merchant(Table, tablename="commerce_buyer_merchants"):
    id = Varchar(length=64, primary_key=True)  # the operator's name for it, e.g. "acme"
    name = Varchar(length=200)
    base_url = Text()  # the ACP API base: <base_url>/checkout_sessions
    feed_url = Text()  # the product feed: <feed_url>/metadata.json and <feed_url>/products.jsonl
    acp_token = Text()  # the bearer token the merchant issued us (secret: never answered, never logged)
    api_version = Varchar(length=20)
    signing_key = Text(null=True, default=None)  # secret: signs our requests (Signature, Timestamp)
    webhook_secret = Text(null=True, default=None)  # secret: verifies the merchant's order webhooks
    feed_id = Text(null=True, default=None)  # metadata.json's id
    feed_updated_at = Text(null=True, default=None)  # metadata.json's updated_at
    feed_read_ms = BigInt(null=True, default=None)  # the last successful read
    feed_tried_ms = BigInt(null=True, default=None)  # the last attempt
    feed_error = Text(null=True, default=None)  # why the last attempt failed (None: it did not)
    products = Integer(default=0)
    created_ms = BigInt()
    updated_ms = BigInt()


class Product(Table, tablename="commerce_buyer_products"):
    id = Varchar(length=600, primary_key=True)  # "<merchant>|<variant id>"
    merchant_id = Varchar(length=64, index=True)
    product_id = Text()  # the feed's Product.id
    variant_id = Text()  # the feed's Variant.id: the checkout item id
    title = Text()
    description = Text(default="")
    url = Text(null=True, default=None)
    image_url = Text(null=True, default=None)
    price_minor = BigInt(null=True, default=None)
    currency = Varchar(length=3, null=True, default=None)  # lower case
    usdc_micro = BigInt(null=True, default=None, index=True)  # the price's USDC equivalent when the read made it
    available = Boolean(default=False)
    availability = Varchar(length=40, null=True, default=None)  # the feed's status, e.g. in_stock
    seller = Text(null=True, default=None)
    digest = Varchar(length=64)  # SHA-256 of the fields above: a change shows as a new digest
    updated_ms = BigInt()


class ProductChange(Table, tablename="commerce_buyer_product_changes"):
    id = Varchar(length=40, primary_key=True)
    merchant_id = Varchar(length=64, index=True)
    variant_id = Text()
    field = Varchar(length=40)  # $entity (listed / not listed), price_minor, currency, available, title, ...
    before = Text(null=True, default=None)  # JSON
    after = Text(null=True, default=None)  # JSON
    feed_updated_at = Text(null=True, default=None)
    changed_ms = BigInt(index=True)


class Order(Table, tablename="commerce_buyer_orders"):
    id = Varchar(length=40, primary_key=True)  # the buyer's request id (its job)
    agent_id = Varchar(length=36, index=True)
    receipt_id = Varchar(length=40)
    merchant_id = Varchar(length=64)
    # accepted, session_open, completing (complete sent, or about to be: only the merchant knows the
    # outcome), completed, failed, outcome_unknown (the merchant never said: held for the operator)
    state = Varchar(length=20, index=True)
    request = Text()  # JSON: the validated input
    max_total = BigInt()  # micro-USDC the agent allowed
    fee = BigInt()  # micro-USDC, the service fee
    checkout_session_id = Text(null=True, default=None, index=True)
    currency = Varchar(length=3, null=True, default=None)
    total_minor = BigInt(null=True, default=None)  # the session's total when completed
    spent = BigInt(null=True, default=None)  # its USDC equivalent, kept from max_total
    merchant_order_id = Text(null=True, default=None)
    order_status = Varchar(length=20, null=True, default=None)  # the merchant's order status (webhooks)
    permalink_url = Text(null=True, default=None)
    refunds = Text(null=True, default=None)  # JSON: the merchant's refunds (webhooks)
    error = Text(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()
    # what complete was sent with, to send it again identically (same Idempotency-Key, same body)
    # while its outcome is unknown; the token is cleared once the order is settled either way
    payment_handler_id = Text(null=True, default=None)
    payment_token = Text(null=True, default=None)  # secret (single-use, this session only): never answered
    completing_ms = BigInt(null=True, default=None)  # when complete was first sent (the wait's clock)
    # the token's expiry (unix s), fixed before it is first asked for: a rerun asks for the same token
    token_expires_at = BigInt(null=True, default=None)


TABLES = [Merchant, Product, ProductChange, Order]
