"""The operator's reads of watches (the console's watches and webhooks page, through
`Platform.watch_counts`, `watch_delivery_counts` and `latest_watch_deliveries`): watches
counted by state (running, paused for its reason, deleted), their deliveries counted by state,
and the latest deliveries. Never a watch's webhook URL or secret, nor a change's content."""

from __future__ import annotations

from piccolo.query.functions.aggregate import Count

from tollway._core.basics.ids import iso
from tollway._core.basics.json_values import JSONObject
from tollway._core.basics.money import usdc
from tollway._core.storage import sql
from tollway._core.watches.tables import Watch, WatchDelivery
from tollway._core.webhooks.tables import Webhook

# One pass over the index (status, pause_reason, deleted_ms), never the rows: a deleted
# watch counts as deleted whatever its status was. GROUP BY an expression, which the ORM
# cannot say.
WATCH_COUNTS = sql.Statement(
    "SELECT CASE WHEN deleted_ms IS NULL THEN status ELSE 'deleted' END AS state, "
    "CASE WHEN deleted_ms IS NULL THEN pause_reason END AS reason, COUNT(*) AS count "
    "FROM tw_watches GROUP BY 1, 2 ORDER BY 1, 2"
)


async def watch_counts() -> list[JSONObject]:
    """`{state, reason, count}`: watches running, paused (for each reason: cap, credits,
    agent) and deleted."""
    rows = await WATCH_COUNTS.rows()
    return [{"state": r["state"], "reason": r["reason"], "count": int(r["count"])} for r in rows]


async def watch_delivery_counts() -> list[JSONObject]:
    """`{state, count}` of the watch deliveries (pending, delivered, dropped)."""
    d = WatchDelivery
    rows = await d.select(d.state, Count(alias="count")).group_by(d.state).order_by(d.state)
    return [{"state": r["state"], "count": int(r["count"])} for r in rows]


async def latest_watch_deliveries(limit: int) -> list[JSONObject]:
    """The `limit` latest watch deliveries (changes detected), newest first, with their watch's
    attribute and entity, state, charge, receipt and whether a webhook was sent for it."""
    d = WatchDelivery
    rows = await (
        d.select(d.id, d.watch_id, d.state, d.charged, d.receipt_id, d.detected_ms, d.delivered_ms)
        .order_by(d.detected_ms, ascending=False)
        .order_by(d.id, ascending=False)
        .limit(limit)
    )
    ids = list({r["watch_id"] for r in rows})
    found = await Watch.select(Watch.id, Watch.attribute, Watch.entity_key).where(Watch.id.is_in(ids)) if ids else []
    watches = {w["id"]: w for w in found}
    delivery_ids = [r["id"] for r in rows]
    hooked = await Webhook.select(Webhook.id).where(Webhook.id.is_in(delivery_ids)) if delivery_ids else []
    sent = {h["id"] for h in hooked}  # a delivery's webhook has the delivery's id
    return [
        {
            "delivery_id": r["id"],
            "watch_id": r["watch_id"],
            "attribute": watches.get(r["watch_id"], {}).get("attribute"),
            "key": watches.get(r["watch_id"], {}).get("entity_key"),
            "state": r["state"],
            "charged": usdc(int(r["charged"])) if r["charged"] is not None else None,
            "receipt_id": r["receipt_id"],
            "webhook": r["id"] in sent,
            "detected_at": iso(r["detected_ms"]),
            "delivered_at": iso(r["delivered_ms"]) if r["delivered_ms"] else None,
        }
        for r in rows
    ]
