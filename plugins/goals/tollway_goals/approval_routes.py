"""The approval pages a person opens from the emailed link: GET shows exactly what is
approved (no script needed), POST is the click. A used, expired or altered link is refused
with a page that says why (410, 410, 403; an unknown ask 404)."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

from tollway import Page, Route, RouteCall, storage

from .approval_links import Refusal, read_token
from .approval_pages import approval_page, approved_page, refusal_page
from .asks import approve
from .ids import iso
from .secrets_store import key
from .tables import Ask

PATH = "/v1/approvals/{token}"
NO_STORE = {"Cache-Control": "no-store", "X-Frame-Options": "DENY"}


def _refused(reason: Refusal) -> Page:
    return Page(refusal_page(reason.value), status=reason.status, headers=NO_STORE)


async def _checked(token: str) -> tuple[dict | None, Refusal | None]:
    ask = None
    parts_ask = token.split(".", 1)[0] if isinstance(token, str) else ""
    if parts_ask:
        ask = await Ask.select().where(Ask.id == parts_ask, Ask.kind == "approval").first()
    verdict = read_token(
        await key(),
        token,
        shown_hash_of=lambda ask_id: ask["shown_hash"] if ask is not None and ask["id"] == ask_id else None,
        now_s=time.time(),
        is_used=lambda _ask_id: ask is not None and ask["status"] not in ("sending", "sent", "chased"),
    )
    if isinstance(verdict, Refusal):
        return ask, verdict
    return ask, None


async def show(call: RouteCall) -> Page:
    token = call.params["token"]
    ask, refused = await _checked(token)
    if refused is not None or ask is None:
        return _refused(refused or Refusal.UNKNOWN)
    return Page(
        approval_page(
            person_name=ask["person_name"],
            question=ask["question"],
            shown=storage.loads(ask["shown"]),
            shown_hash=ask["shown_hash"],
            action_path=f"/v1/approvals/{token}",
            expires_at_iso=iso(int(ask["deadline_ms"])),
        ),
        headers=NO_STORE,
    )


async def click(call: RouteCall) -> Page:
    token = call.params["token"]
    form = (
        parse_qs(call.request.body.decode("utf-8", "replace"), max_num_fields=10)
        if len(call.request.body) <= 4096
        else {}
    )
    seen = (form.get("shown_hash") or [""])[0]
    async with storage.transaction():
        ask, refused = await _checked(token)
        if refused is not None or ask is None:
            return _refused(refused or Refusal.UNKNOWN)
        if seen != ask["shown_hash"]:  # the page shown was not this content
            return _refused(Refusal.ALTERED)
        answer = await approve(ask, seen)
    if answer is None:
        return _refused(Refusal.USED)
    await call.platform.publish("tollway_goal_sessions", ask["goal_id"])
    return Page(approved_page(who=answer["name"], when_iso=answer["when"], shown_hash=seen), headers=NO_STORE)


ROUTES = (
    Route(
        method="GET",
        path=PATH,
        name="approval_page",
        title="An approval page",
        description="The page an approval link opens: exactly what is approved, and the button.",
        handle=show,
        auth="public",
        page=True,
        tags=("approvals",),
        statuses=(403, 404, 410),
    ),
    Route(
        method="POST",
        path=PATH,
        name="approval_click",
        title="Approve",
        description="The click on an approval page (single use).",
        handle=click,
        auth="public",
        page=True,
        tags=("approvals",),
        statuses=(403, 404, 410),
    ),
)
