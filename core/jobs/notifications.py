"""Stored notifications (docs/jobs.md, "Notifications").

Listing returns the newest first. A proven caller's listing (access token or
valid agent proof) marks what it returned as read, so `unread=true` shows what
the agent has not fetched yet; a bare X-Agent-ID only looks (docs/auth.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from tollway._core.basics.errors import invalid_request
from tollway._core.basics.ids import iso, monotonic_us, new_uuid, now_ms
from tollway._core.messages.tables import Notification as N
from tollway._core.storage import sql
from tollway._core.wire.reads import Notification, NotificationPage

TYPES = (
    "job_completed",
    "job_failed",
    "voice_completed",
    "sms_completed",
    "credit_issued",
    "domain_expiring",
    "phone_expiring",
    "watch_change",
    "watch_paused",  # ours: a watch paused for its cap or its credits (the owner is told once per pause)
    "case_needs_a_person",  # ours: a goal's case reached its budget or step limit; its spending stopped
    "commerce_order_updated",  # ours: a merchant's order event about an order commerce_buy placed (docs/commerce.md)
    "commerce_refund_credited",  # ours: a merchant's refund of such an order, credited to the agent (docs/commerce.md)
)
MAX_LIMIT = 100

# Raw: every completed or failed job and every delivered watch change writes one, on the paths
# bench/jobs.py and bench/history.py measure, where a table query costs a few times a named
# statement (docs/storage.md). Listing and marking read are table queries.
INSERT = sql.Statement(
    "INSERT INTO tw_notifications (id, agent_id, type, title, body, metadata, read, created_ms, seq) "
    "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {})"
)


def new_row(agent_id: str, type_: str, title: str, body: str | None, metadata: Mapping[str, Any]) -> tuple[Any, ...]:
    """A new notification's values, in INSERT's column order (its id first): for `notify`, and for
    a statement that writes one together with what it tells (the job's completion, core/jobs/completion.py)."""
    if type_ not in TYPES:
        raise ValueError(f"unknown notification type {type_!r}")
    metadata_json = msgspec.json.encode(dict(metadata)).decode()
    return (new_uuid(), agent_id, type_, title, body, metadata_json, False, now_ms(), monotonic_us())


async def notify(agent_id: str, type_: str, title: str, body: str | None, metadata: Mapping[str, Any]) -> str:
    row = new_row(agent_id, type_, title, body, metadata)
    await INSERT.execute(*row)
    return row[0]


def _bool(query: Mapping[str, str], name: str, default: bool) -> bool:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise invalid_request(f"{name} must be true or false.", [{"field": name, "message": "expected a boolean"}])


async def list_for(agent_id: str, query: Mapping[str, str], *, mark_read: bool) -> NotificationPage:
    """The agent's notifications; with `mark_read` those returned unread become read."""
    unread = _bool(query, "unread", False)
    raw_limit = query.get("limit") or "50"
    try:
        limit = int(raw_limit)
    except ValueError:
        raise invalid_request(
            "limit must be a whole number.", [{"field": "limit", "message": "expected a whole number"}]
        ) from None
    if limit < 1:
        raise invalid_request("limit must be at least 1.", [{"field": "limit", "message": "must be at least 1"}])
    limit = min(limit, MAX_LIMIT)
    mine = [N.agent_id == agent_id] + ([N.read == False] if unread else [])  # noqa: E712 (a column comparison)
    rows = await N.select().where(*mine).order_by(N.created_ms, N.seq, ascending=False).limit(limit)
    items = [
        Notification(
            id=r["id"],
            agent_id=r["agent_id"],
            type=r["type"],
            title=r["title"],
            body=r["body"],
            metadata=msgspec.json.decode(r["metadata"]),
            read=bool(r["read"]),
            created_at=iso(int(r["created_ms"])),
        )
        for r in rows
    ]
    unseen = [i.id for i in items if not i.read] if mark_read else []
    if unseen:
        await N.update({N.read: True}).where(N.id.is_in(unseen))
    return NotificationPage(notifications=items, count=len(items))
