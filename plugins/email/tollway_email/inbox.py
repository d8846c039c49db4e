"""The inbox: every inbound email addressed to an agent's own address (`<local>+a<agent id>@…`,
the Reply-To of what the service sends for it) is kept for that agent, its attachments stored
once by SHA-256 (each at most 5 MB); the agent lists and reads it (free reads; bodies and attachments need a proof or a token)."""

from __future__ import annotations

import base64
import email
import email.policy
import hashlib
import secrets
from collections.abc import Mapping
from email.message import EmailMessage
from typing import Any

import msgspec

from tollway import InboundMessage, QueryFlag, QueryInt, Refusal, RouteCall, iso
from tollway.helpers import agent_of_address

from .tables import Blob, InboxAttachment, InboxEmail

MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024
MAX_LIMIT = 100
# The reads' query parameters, declared once: the routes list them (OpenAPI, MCP) and the handlers read them.
INCLUDE_BODY = QueryFlag("include_body", "true to add bodies and attachment content.")
LIMIT = QueryInt("limit", "1 to 100, default 20.", default=20, low=1, high=MAX_LIMIT)
OFFSET = QueryInt("offset", "Emails to skip.", default=0, low=0, high=10**9)


def _parts(raw: bytes) -> tuple[str | None, list[tuple[str, str, bytes]]]:
    """(the HTML body, the attachments as (filename, content type, bytes))."""
    if not raw:
        return None, []
    msg: EmailMessage = email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[assignment]
    html_part = msg.get_body(("html",))
    html = html_part.get_content() if html_part is not None else None
    files = []
    for part in msg.iter_attachments():
        content = part.get_payload(decode=True) or b""
        files.append((part.get_filename() or "attachment", part.get_content_type(), content))
    return html, files


async def keep(message: InboundMessage, platform: Any) -> bool:
    """The inbound handler: keep the message for each agent it is addressed to."""
    if message.channel != "email":
        return False
    agents = list(dict.fromkeys(a for a in (agent_of_address(r) for r in message.recipients) if a))
    if not agents:
        return False
    html, files = _parts(message.raw)
    thread = (message.references[0] if message.references else None) or message.in_reply_to or message.message_id or ""
    async with platform.transaction():
        for agent_id in agents:
            email_id = f"eml_{secrets.token_hex(12)}"
            await InboxEmail.insert(
                InboxEmail(
                    id=email_id,
                    agent_id=agent_id,
                    sender=message.sender,
                    recipients=msgspec.json.encode(list(message.recipients)).decode(),
                    subject=message.subject,
                    message_id=message.message_id,
                    thread_id=thread or email_id,
                    body=message.text,
                    body_html=html,
                    received_ms=message.received_ms,
                )
            )
            for position, (name, content_type, content) in enumerate(files):
                if len(content) > MAX_ATTACHMENT_BYTES:
                    content_hash, size = "", len(content)  # listed, its content not kept
                else:
                    content_hash, size = await _store_blob(content), len(content)
                await InboxAttachment.insert(
                    InboxAttachment(
                        id=f"att_{secrets.token_hex(12)}",
                        email_id=email_id,
                        position=position,
                        filename=name[:255],
                        content_type=content_type,
                        size=size,
                        sha256=content_hash,
                    )
                )
    return True


async def _store_blob(content: bytes) -> str:
    digest = hashlib.sha256(content).hexdigest()
    await Blob.insert(Blob(sha256=digest, content=content, size=len(content))).on_conflict(
        target=Blob.sha256, action="DO NOTHING"
    )
    return digest


async def _contents(digests: set[str]) -> dict[str, Any]:
    """The kept contents of these attachments, by SHA-256 (one kept too large has none)."""
    if not digests:
        return {}
    found = await Blob.select(Blob.sha256, Blob.content).where(Blob.sha256.is_in(sorted(digests)))
    return {b["sha256"]: b["content"] for b in found}


async def _resource(row: Mapping[str, Any], include_body: bool) -> dict[str, Any]:
    attachments = (
        await InboxAttachment.select(
            InboxAttachment.filename,
            InboxAttachment.content_type,
            InboxAttachment.size,
            InboxAttachment.sha256,
        )
        .where(InboxAttachment.email_id == row["id"])
        .order_by(InboxAttachment.position)
    )
    out: dict[str, Any] = {
        "id": row["id"],
        "from": row["sender"],
        "subject": row["subject"],
        "received_at": iso(int(row["received_ms"])) if row["received_ms"] else None,
        "thread_id": row["thread_id"],
        "attachments": [
            {"filename": a["filename"], "content_type": a["content_type"], "size": int(a["size"])} for a in attachments
        ],
    }
    if include_body:
        out["body"], out["body_html"] = row["body"], row["body_html"]
        contents = await _contents({a["sha256"] for a in attachments})
        for item, a in zip(out["attachments"], attachments):
            content = contents.get(a["sha256"])
            item["content"] = base64.b64encode(bytes(content)).decode() if content is not None else None
    return out


def _include_body(call: RouteCall) -> bool:
    """include_body=true: bodies and attachments are private, shown only to a proven caller."""
    include_body = INCLUDE_BODY.read(call.query)
    if include_body:
        call.require_proof("An email's body and attachments")
    return include_body


async def list_emails(call: RouteCall) -> dict[str, Any]:
    include_body = _include_body(call)
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    rows = (
        await InboxEmail.select()
        .where(InboxEmail.agent_id == call.agent_id)
        .order_by(
            InboxEmail.received_ms,
            InboxEmail.id,
            ascending=False,
        )
        .limit(limit + 1)
        .offset(offset)
    )
    emails = [await _resource(r, include_body) for r in rows[:limit]]
    return {"emails": emails, "count": len(emails), "has_more": len(rows) > limit, "agent_id": call.agent_id}


async def read_email(call: RouteCall) -> dict[str, Any]:
    include_body = _include_body(call)
    row = (
        await InboxEmail.select()
        .where((InboxEmail.id == call.params["email_id"]) & (InboxEmail.agent_id == call.agent_id))
        .first()
    )
    if row is None:
        raise Refusal("not_found", "No such email in your inbox.", status=404)
    return await _resource(row, include_body)
