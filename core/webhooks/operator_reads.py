"""The operator's reads of the webhook outbox (the console's watches and webhooks page, through
`Platform.webhook_counts`, `webhooks_page` and `webhook_entry`): webhooks counted by state,
the outbox newest first by keyset with each one's last attempt, and one webhook with every
attempt. Never the signing secret, and never the body or the full URL: a body holds the
agent's own data (its watch's change and receipt, a goal's result, a buyer's order) and a
URL's path or query may carry a receiver's token, so a webhook shows its target's scheme and
host, its kind and subject, and the size of its body."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from piccolo.query.functions.aggregate import Count, Max

from tollway._core.basics.ids import iso
from tollway._core.basics.json_values import JSONObject
from tollway._core.webhooks.outbox import MAX_ATTEMPTS
from tollway._core.webhooks.tables import Webhook, WebhookAttempt

STATES = ("pending", "delivered", "abandoned")
_COLUMNS = (
    Webhook.id,
    Webhook.kind,
    Webhook.subject,
    Webhook.url,
    Webhook.state,
    Webhook.attempts,
    Webhook.budget_from,
    Webhook.next_attempt_ms,
    Webhook.created_ms,
    Webhook.updated_ms,
    Webhook.redelivered_ms,
    Webhook.signing,
)


def target_of(url: str) -> str:
    """Where a webhook goes, without its path, query or any user part: `scheme://host[:port]`."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return "(not a valid URL)"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def _entry(row: dict[str, Any], last: dict[str, Any] | None) -> JSONObject:
    attempts, budget_from, state = int(row["attempts"]), int(row["budget_from"] or 0), row["state"]
    return {
        "webhook_id": row["id"],
        "kind": row["kind"],
        "subject": row["subject"],
        "target": target_of(row["url"]),
        "state": state,
        "attempts": attempts,
        "budget_from": budget_from,
        "attempts_left": max(MAX_ATTEMPTS - (attempts - budget_from), 0) if state == "pending" else 0,
        "signing": row["signing"] or "service",
        "created_at": iso(row["created_ms"]),
        "updated_at": iso(row["updated_ms"]),
        "next_attempt_at": iso(row["next_attempt_ms"]) if state == "pending" else None,
        "redelivered_at": iso(row["redelivered_ms"]) if row["redelivered_ms"] else None,
        "last_status_code": last["status_code"] if last else None,
        "last_error": last["error"] if last else None,
        "redeliverable": state == "abandoned",
    }


async def webhook_counts() -> list[JSONObject]:
    """`{state, count}` for every state that has webhooks, by name."""
    rows = await Webhook.select(Webhook.state, Count(alias="count")).group_by(Webhook.state).order_by(Webhook.state)
    return [{"state": r["state"], "count": int(r["count"])} for r in rows]


async def _last_attempts(webhook_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The latest attempt of each of these webhooks that has one."""
    if not webhook_ids:
        return {}
    a = WebhookAttempt
    latest = a.select(Max(a.id)).where(a.webhook_id.is_in(webhook_ids)).group_by(a.webhook_id)
    rows = await a.select(a.webhook_id, a.status_code, a.error).where(a.id.is_in(latest))
    return {r["webhook_id"]: r for r in rows}


async def webhooks_page(*, state: str | None, before: str | None, limit: int) -> JSONObject:
    """The outbox, newest first, every webhook or one state's, one page at a time by keyset:
    `before` is the `next` of the page before (`<created_ms>:<webhook_id>` of its last row).
    `{webhooks, next}`, each with its last attempt's status code and error."""
    where = []
    if state:
        where.append(Webhook.state == state)
    if before:
        at, _, wid = before.partition(":")
        if at.isdigit() and wid:  # said so both engines read (created_ms, id) backwards from `at`
            where.append((Webhook.created_ms <= int(at)) & ((Webhook.created_ms < int(at)) | (Webhook.id < wid)))
    rows = await (
        Webhook.select(*_COLUMNS)
        .where(*where)
        .order_by(Webhook.created_ms, ascending=False)
        .order_by(Webhook.id, ascending=False)
        .limit(limit + 1)
    )
    page = rows[:limit]
    last = await _last_attempts([r["id"] for r in page])
    return {
        "webhooks": [_entry(r, last.get(r["id"])) for r in page],
        "next": f"{page[-1]['created_ms']}:{page[-1]['id']}" if len(rows) > limit else None,
    }


async def webhook_entry(webhook_id: str) -> JSONObject | None:
    """One webhook with every attempt, oldest first (number, time, duration, status code,
    error), or None."""
    row = await Webhook.select(*_COLUMNS, Webhook.body).where(Webhook.id == webhook_id).first()
    if row is None:
        return None
    a = WebhookAttempt
    attempts = await (
        a.select(a.attempt, a.started_ms, a.duration_ms, a.status_code, a.error)
        .where(a.webhook_id == webhook_id)
        .order_by(a.started_ms)
        .order_by(a.id)
    )
    entry = _entry(row, attempts[-1] if attempts else None)
    entry["body_bytes"] = len(row["body"].encode())
    entry["history"] = [
        {
            "attempt": int(r["attempt"]),
            "started_at": iso(r["started_ms"]),
            "duration_ms": int(r["duration_ms"]),
            "status_code": r["status_code"],
            "error": r["error"],
        }
        for r in attempts
    ]
    return entry
