"""The watches and webhooks pages: watches and their deliveries counted by state, the webhook
outbox newest first (every webhook or one state's, by keyset) with each one's last attempt,
one webhook with every attempt, and redelivering a given-up webhook through the kernel
(`Platform.redeliver_webhook`). No page shows a webhook's secret, body or URL path
(docs/console.md)."""

from __future__ import annotations

from urllib.parse import urlencode

from tollway import Page, RouteCall

from . import sessions
from .pages import _platform, _route, redirect, refused, render, signed_in

HERE = "/console/webhooks"
STATES = ("pending", "delivered", "abandoned")
PAGE_SIZE = 50
LATEST_DELIVERIES = 20


def _page(template: str, session: str, status: int = 200, **values: object) -> Page:
    """A page of this area, for the signed-in operator (its forms carry the session's CSRF token)."""
    return render(template, status=status, csrf=sessions.csrf_for(session), here=HERE, signed_in=True, **values)


def _state(call: RouteCall) -> str:
    wanted = call.query.get("state", "")
    return wanted if wanted in STATES else ""


async def _webhooks(call: RouteCall, session: str) -> Page:
    platform, state = _platform(call), _state(call)
    before = (call.query.get("before") or "")[:100] or None
    page = await platform.webhooks_page(state=state or None, before=before, limit=PAGE_SIZE)
    older = urlencode({k: v for k, v in (("state", state), ("before", page["next"])) if v}) if page["next"] else None
    return _page(
        "webhooks.html",
        session,
        state=state,
        states=STATES,
        counts=await platform.webhook_counts(),
        webhooks=page["webhooks"],
        older=older,
        newest=urlencode({"state": state}) if before else None,
        watch_counts=await platform.watch_counts(),
        delivery_counts=await platform.watch_delivery_counts(),
        deliveries=await platform.latest_watch_deliveries(LATEST_DELIVERIES),
    )


async def _webhook_page(call: RouteCall, session: str, *, error: str | None = None, status: int = 200) -> Page:
    entry = await _platform(call).webhook_entry(call.params["webhook_id"])
    if entry is None:
        return refused(404, "Not found", "There is no such webhook.")
    return _page("webhook.html", session, status=status, hook=entry, error=error)


async def _webhook(call: RouteCall, session: str) -> Page:
    return await _webhook_page(call, session)


async def _redeliver(call: RouteCall, session: str) -> Page:
    webhook_id = call.params["webhook_id"]
    done = await _platform(call).redeliver_webhook(webhook_id)
    if done is None:
        return refused(404, "Not found", "There is no such webhook.")
    if not done["queued"]:
        return await _webhook_page(call, session, error=str(done["reason"]), status=409)
    return redirect(f"{HERE}/{webhook_id}")


WEBHOOK_ID = (("webhook_id", "The webhook's id (its delivery id, sent as `webhook-id`)."),)
ROUTES = (
    _route("GET", HERE, "console_webhooks", "Watches and webhooks", signed_in(_webhooks)),
    _route(
        "GET",
        f"{HERE}/{{webhook_id}}",
        "console_webhook",
        "A webhook and its attempts",
        signed_in(_webhook),
        statuses=(303, 404),
        param_docs=WEBHOOK_ID,
    ),
    _route(
        "POST",
        f"{HERE}/{{webhook_id}}/redeliver",
        "console_redeliver_webhook",
        "Redeliver a given-up webhook",
        signed_in(_redeliver),
        statuses=(303, 403, 404, 409),
        param_docs=WEBHOOK_ID,
    ),
)
