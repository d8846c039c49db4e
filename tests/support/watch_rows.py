"""Watch rows for the delivery tests, written as creating a watch writes them (the HTTP
resource has its own tests): running, nothing spent, at the default price per change."""

from __future__ import annotations

from tollway._core.basics.ids import new_uuid, now_ms
from tollway._core.storage import sql

PRICE = 20_000  # 0.02 USDC, the default price per change


async def new_watch(
    agent_id: str,
    key: str,
    *,
    attribute: str = "test_feed",
    entity_type: str = "item",
    max_spend: int = 1_000_000,
    webhook_url: str | None = None,
    webhook_secret: str | None = None,
) -> str:
    wid, now = new_uuid(), now_ms()
    await sql.fetch(
        "INSERT INTO tw_watches (id, agent_id, entity_type, attribute, entity_key, max_spend, spent, price_per_change, "
        "changes_delivered, status, pause_notified, webhook_url, webhook_secret, created_ms, updated_ms) "
        "VALUES ({}, {}, {}, {}, {}, {}, 0, {}, 0, 'running', {}, {}, {}, {}, {})",
        wid,
        agent_id,
        entity_type,
        attribute,
        key,
        max_spend,
        PRICE,
        False,
        webhook_url,
        webhook_secret,
        now,
        now,
    )
    return wid
