"""Watches and the changes to deliver to them."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class Watch(Table, tablename="tw_watches", db=PLACEHOLDER_ENGINE):
    """A watch on one entity of a watchable source (docs/watches.md). Money in micro-USDC."""

    id = Varchar(length=36, primary_key=True)
    agent_id = Varchar(length=36, index=True)
    entity_type = Varchar(length=32)
    attribute = Varchar(length=64)
    entity_key = Varchar(length=256)
    max_spend = BigInt()
    spent = BigInt(default=0)
    price_per_change = BigInt()
    changes_delivered = Integer(default=0)
    status = Varchar(length=12)  # running, paused
    pause_reason = Varchar(length=12, null=True, default=None)  # cap, credits, agent
    pause_notified = Boolean(default=False)  # the owner was told of this pause
    webhook_url = Text(null=True, default=None)
    webhook_secret = Text(null=True, default=None)
    last_delivery_ms = BigInt(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()
    deleted_ms = BigInt(null=True, default=None)


class WatchDelivery(Table, tablename="tw_watch_deliveries", db=PLACEHOLDER_ENGINE):
    """One change for one watch: created `pending` when the change is detected,
    `delivered` in the transaction that charges it, `dropped` if the watch is deleted first."""

    id = Varchar(length=40, primary_key=True)  # the delivery id (receipt job_id, webhook-id)
    watch_id = Varchar(length=36, index=True)
    change_ref = Varchar(length=80)  # unique per watch: the fact row the change came from
    seq = BigInt()  # delivery order within the watch
    change = Text()  # the Change row, JSON
    state = Varchar(length=12)  # pending, delivered, dropped
    receipt_id = Varchar(length=40, null=True, default=None)
    charged = BigInt(null=True, default=None)
    detected_ms = BigInt()
    delivered_ms = BigInt(null=True, default=None)


WATCH_TABLES: tuple[type[Table], ...] = (
    Watch,
    WatchDelivery,
)
