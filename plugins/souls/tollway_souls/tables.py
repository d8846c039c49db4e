"""The souls plugin's tables: soul agents (sellers) and their services, orders (one per
purchase, keyed by the buyer's request id) and ratings (one per buyer per service).
Money columns are integers of micro-USDC, times unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.table import Table


class SoulAgent(Table, tablename="souls_agents"):
    id = Varchar(length=40, primary_key=True)  # sa_...
    agent_id = Varchar(length=36, unique=True)  # the seller's agent: earnings are its credits
    wallet_address = Varchar(length=42, null=True, default=None)
    slug = Varchar(length=64, unique=True)
    name = Varchar(length=100)
    display_name = Varchar(length=100)
    category = Varchar(length=40, index=True)
    soul_md = Text(default="")
    avatar_url = Text(null=True, default=None)
    key_hash = Varchar(length=64, unique=True)  # SHA-256 hex of the soul key; the key itself is never stored
    key_rotated_ms = BigInt(null=True, default=None)  # the last rotation: new payout addresses are held 24 h after it
    key_revoked_ms = BigInt(null=True, default=None)  # set: no key works until the wallet rotates one
    webhook_url = Text(null=True, default=None)
    webhook_secret = Text(null=True, default=None)
    rating_sum = BigInt(default=0)
    rating_count = Integer(default=0)
    created_ms = BigInt()
    updated_ms = BigInt()


class SoulService(Table, tablename="souls_services"):
    id = Varchar(length=40, primary_key=True)  # svc_...
    soul_id = Varchar(length=40, index=True)
    slug = Varchar(length=64)
    title = Varchar(length=120)
    description = Text(default="")
    price = BigInt()  # micro-USDC
    category = Varchar(length=40)
    enabled = Boolean(default=True)
    created_ms = BigInt()
    updated_ms = BigInt()


class SoulOrder(Table, tablename="souls_orders"):
    id = Varchar(length=40, primary_key=True)  # the buyer's request id (the job)
    soul_id = Varchar(length=40, index=True)
    service_id = Varchar(length=40)
    buyer_agent_id = Varchar(length=36, index=True)
    receipt_id = Varchar(length=40)
    price = BigInt()
    share = BigInt()  # the seller's part of the price; the rest is the service fee
    request = Text()  # JSON: what the buyer asked for
    state = Varchar(length=12, index=True)  # open, fulfilled, declined, expired, refunded
    result = Text(null=True, default=None)  # JSON: what the seller delivered
    note = Text(null=True, default=None)  # the seller's reason when declined
    deadline_ms = BigInt(index=True)
    created_ms = BigInt()
    updated_ms = BigInt()


class SoulRating(Table, tablename="souls_ratings"):
    id = Varchar(length=40, primary_key=True)
    soul_id = Varchar(length=40, index=True)
    service_id = Varchar(length=40)
    buyer_agent_id = Varchar(length=36)
    stars = Integer()
    comment = Text(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


TABLES = [SoulAgent, SoulService, SoulOrder, SoulRating]
