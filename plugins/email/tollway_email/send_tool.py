"""The email tools: `email_send` (POST /v1/tools/email/send, 0.02 USDC, a job whose Job
resource carries `email_tracking`) sends one message from the agent's own address (replies
come back to its inbox), its HTML instrumented for opens and clicks; `POST
/v1/tools/email/quote` (free) prices and checks a draft without sending it."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Protocol, cast

import msgspec
from msgspec import UNSET, Meta, UnsetType

from tollway import (
    AdmissionChecks,
    Example,
    JobDeclaration,
    Refusal,
    Route,
    RouteCall,
    Setting,
    Tool,
    ToolContext,
    ToolError,
    iso,
    now_ms,
    usdc,
)
from tollway.helpers import agent_address

from . import headers, tracking
from .tables import SentEmail

FAMILY = "email"
PRICE = 20_000  # 0.02 USDC
PUBLIC_URL = Setting(
    FAMILY,
    "public_url",
    "http://127.0.0.1:8402",
    "The service's public base URL, for tracking pixels and links in what it sends.",
)
_ADDRESS = r"^[^@\s<>,;]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$"
Address = Annotated[str, Meta(min_length=6, max_length=320, pattern=_ADDRESS)]


class EmailDraft(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One message to one recipient: a plain-text body, and optionally an HTML one."""

    to: Address
    subject: Annotated[str, Meta(min_length=1, max_length=998)]
    text: Annotated[str, Meta(min_length=1, max_length=100_000)]
    html: Annotated[str, Meta(max_length=200_000)] | UnsetType = UNSET
    track_opens: bool = True
    track_clicks: bool = True


class EmailQueued(msgspec.Struct):
    message_id: str
    sender: str = msgspec.field(name="from")
    to: str
    subject: str
    status: str
    tracked: bool


async def _change(request_id: str, **values: Any) -> None:
    await SentEmail.update({**values, "updated_ms": now_ms()}).where(SentEmail.request_id == request_id)


def check(draft: EmailDraft) -> None:
    """Before payment: the fields that become headers are one line each (the quote's check too)."""
    headers.refuse_bad((("to", draft.to), ("subject", draft.subject)))


class EmailClient(Protocol):
    """What every `email` provider's client offers (the smtp provider's `SmtpSender` is one)."""

    @property
    def from_address(self) -> str: ...

    async def send(
        self,
        *,
        to: str,
        subject: str,
        text: str,
        html: str | None = None,
        reply_to: str | None = None,
        sender: str | None = None,
    ) -> str: ...


async def run(draft: EmailDraft, ctx: ToolContext) -> EmailQueued:
    ctx.check_content(draft.subject, draft.text, None if draft.html is UNSET else draft.html)
    client = cast(EmailClient, ctx.provider("email"))  # the kind's interface
    sender = agent_address(client.from_address, ctx.agent_id or "")
    base = tracking.base_url(ctx.setting(tracking.TRACKING_URL) or ctx.setting(PUBLIC_URL) or "")
    html = None if draft.html is UNSET else draft.html
    links: list[str] = []
    if html is not None and (draft.track_opens or draft.track_clicks):
        html, links = tracking.instrument(
            html,
            secret=await tracking.key(),
            request_id=ctx.request_id,
            base_url=base,
            opens=draft.track_opens,
            clicks=draft.track_clicks,
        )
    now = now_ms()
    await SentEmail.insert(
        SentEmail(
            request_id=ctx.request_id,
            agent_id=ctx.agent_id,
            sender=sender,
            recipient=draft.to,
            subject=draft.subject,
            status="queued",
            opens=0,
            clicks=0,
            links=json.dumps(links),
            message_id=None,
            created_ms=now,
            updated_ms=now,
        )
    ).on_conflict(target=SentEmail.request_id, action="DO NOTHING")
    try:
        message_id = await client.send(
            to=draft.to, subject=draft.subject, text=draft.text, html=html, reply_to=sender, sender=sender
        )
    except ToolError:
        await _change(ctx.request_id, status="failed")
        raise
    await _change(ctx.request_id, status="sent", message_id=message_id)
    return EmailQueued(
        message_id=message_id,
        sender=sender,
        to=draft.to,
        subject=draft.subject,
        status="sent",
        tracked=html is not None and bool(draft.track_opens or draft.track_clicks),
    )


async def job_extras(request_id: str) -> dict[str, Any] | None:
    row = await SentEmail.select().where(SentEmail.request_id == request_id).first()
    if row is None:
        return None
    return {
        "email_tracking": {
            "from": row["sender"],
            "to": row["recipient"],
            "subject": row["subject"],
            "status": row["status"],
            "opens": int(row["opens"]),
            "clicks": int(row["clicks"]),
        }
    }


EMAIL_SEND = Tool(
    name="email_send",
    path="/v1/tools/email/send",
    title="Send an email",
    summary="Sends one email from your own address (replies reach your inbox), with open and click tracking.",
    description=(
        "Send one email to one recipient from your own address at the service's mail domain (replies come back to your "
        "inbox). A plain-text body, and optionally an HTML one, which is tracked: opens by a pixel, clicks by links that "
        "pass through the service (track_opens, track_clicks; default on). Runs as a job whose email_tracking says "
        "from, to, subject, status, opens and clicks."
    ),
    category="communication",
    subcategory="email",
    input_type=EmailDraft,
    output_type=EmailQueued,
    run=run,
    price=PRICE,
    family=FAMILY,
    idempotency="optional",
    rate_limit="paid",
    job=JobDeclaration(accepted_status="queued", job_extras=job_extras),  # its Job adds the email's tracking
    admission=AdmissionChecks(check=check, provider_kind="email"),
    examples=(
        Example(
            title="A tracked message",
            input={
                "to": "dana@example.com",
                "subject": "Your invoice",
                "text": "Hello Dana.",
                "html": '<p>Hello Dana, <a href="https://example.com/inv/42">your invoice</a>.</p>',
            },
        ),
    ),
)


async def quote(call: RouteCall) -> dict[str, Any]:
    draft: EmailDraft = call.body
    check(draft)
    html = "" if draft.html is UNSET else draft.html
    links = re.findall(r'<a\b[^>]*?\bhref\s*=\s*["\'](https?://[^"\']+)', html, flags=re.I)
    size = len(draft.subject.encode()) + len(draft.text.encode()) + len(html.encode())
    warnings = []
    if html and not draft.text.strip():
        warnings.append("an empty plain-text part")
    if size > 10 * 1024 * 1024:
        raise Refusal("invalid_request", "The message is over 10 MB.", details=[{"field": "$", "message": "too large"}])
    return {
        "success": True,
        "data": {
            "price_usdc": usdc(PRICE),
            "to": draft.to,
            "size_bytes": size,
            "links": len(links),
            "tracked": bool(html) and (draft.track_opens or draft.track_clicks),
            "warnings": warnings,
            "quoted_at": iso(now_ms()),
        },
    }


QUOTE_ROUTE = Route(
    method="POST",
    path="/v1/tools/email/quote",
    name="email_quote",
    title="Price and check an email",
    description="What sending this draft would cost and what the service would do with it (size, links tracked), without sending it.",
    handle=quote,
    auth="read",
    body_type=EmailDraft,
    rate_limit="paid",
    tags=("email",),
)
