"""The SMS inbox: each text that reaches the service's numbers (Twilio's incoming-message
webhook) is kept once: a text to an agent's own number is that agent's; one to the shared
configured number is threaded to the agent that last texted its sender from that number
(`related_outbound_id` is that message's id), else kept unassigned; then it is handed to
the service's inbound handlers as a `tollway.InboundMessage(channel="sms")`. An agent lists
and reads its own texts (free reads, private: every text shows its body, so a read proof or
an access token is needed whatever the proof mode)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

import msgspec

from tollway import InboundMessage, QueryInt, Refusal, Route, RouteCall, iso, now_ms

from .numbers import owner_of
from .settings import thread_id
from .tables import InboundSms, SmsMessage

MAX_TEXT = 10_000  # Twilio joins a long text's segments: 1600 characters in practice
MAX_MEDIA = 10  # Twilio's limit of media per message
MAX_LIMIT = 100
LIMIT = QueryInt("limit", "1 to 100, default 20.", default=20, low=1, high=MAX_LIMIT)
OFFSET = QueryInt("offset", "Texts to skip.", default=0, low=0, high=10**9)


class SmsInboxMessage(msgspec.Struct):
    id: str
    sender: str = msgspec.field(name="from")
    to: str
    body: str
    num_media: int
    media_urls: list[str]
    thread_id: str
    related_outbound_id: str | None
    received_at: str
    created_at: str


class SmsInboxPage(msgspec.Struct):
    messages: list[SmsInboxMessage]
    count: int


async def _kept(message_sid: str) -> dict[str, Any] | None:
    return await InboundSms.select(InboundSms.id).where(InboundSms.message_sid == message_sid).first()


async def receive(platform: Any, form: list[tuple[str, str]], raw: bytes) -> bool:
    """Keep one incoming text (once per Twilio MessageSid) and hand it to the inbound
    handlers; False when it was kept already (Twilio posted it again)."""
    params = dict(form)
    sid = params["MessageSid"].strip()[:64]
    if await _kept(sid) is not None:
        return False
    sender, to = params["From"].strip()[:40], params.get("To", "").strip()[:40]
    body = params.get("Body", "")[:MAX_TEXT]
    count = params.get("NumMedia", "0").strip()
    num_media = min(int(count), MAX_MEDIA) if count.isdigit() and len(count) < 4 else 0
    media_urls = [params[f"MediaUrl{i}"][:2000] for i in range(num_media) if params.get(f"MediaUrl{i}")]
    owner = await owner_of(to)  # an agent's own number: the text is that agent's
    mine = SmsMessage.agent_id == owner if owner else SmsMessage.sent_ms.is_not_null()
    related = (
        await SmsMessage.select(SmsMessage.id, SmsMessage.agent_id, SmsMessage.sid)
        .where((SmsMessage.recipient == sender) & (SmsMessage.sender == to) & SmsMessage.sent_ms.is_not_null() & mine)
        .order_by(SmsMessage.sent_ms, SmsMessage.id, ascending=False)
        .first()
    )
    agent_id = owner or ((related["agent_id"] or None) if related else None)
    now = now_ms()
    inbound_id = f"smsin_{secrets.token_hex(12)}"
    await InboundSms.insert(
        InboundSms(
            id=inbound_id,
            message_sid=sid,
            agent_id=agent_id,
            sender=sender,
            recipient=to,
            body=body,
            num_media=num_media,
            media_urls=json.dumps(media_urls),
            thread_id=thread_id(agent_id, sender),
            related_outbound_id=related["id"] if agent_id and related else None,
            received_ms=now,
            created_ms=now,
        )
    ).on_conflict(target=InboundSms.message_sid, action="DO NOTHING")
    kept = await _kept(sid)
    if kept is None or kept["id"] != inbound_id:
        return False  # the same text posted twice at once: the other post kept it
    await platform.deliver_inbound(
        InboundMessage(
            channel="sms",
            sender=sender,
            recipients=(to,) if to else (),
            subject="",
            text=body,
            message_id=sid,
            in_reply_to=related["sid"] if agent_id and related else None,
            received_ms=now,
            raw=raw,
        )
    )
    return True


def message_of(r: Mapping[str, Any]) -> SmsInboxMessage:
    return SmsInboxMessage(
        id=r["id"],
        sender=r["sender"],
        to=r["recipient"],
        body=r["body"],
        num_media=int(r["num_media"]),
        media_urls=list(json.loads(r["media_urls"] or "[]")),
        thread_id=r["thread_id"],
        related_outbound_id=r["related_outbound_id"],
        received_at=iso(int(r["received_ms"])),
        created_at=iso(int(r["created_ms"])),
    )


async def list_messages(call: RouteCall) -> SmsInboxPage:
    limit, offset = LIMIT.read(call.query), OFFSET.read(call.query)
    found = (
        await InboundSms.select()
        .where(InboundSms.agent_id == call.agent_id)
        .order_by(
            InboundSms.received_ms,
            InboundSms.id,
            ascending=False,
        )
        .limit(limit)
        .offset(offset)
    )
    messages = [message_of(r) for r in found]
    return SmsInboxPage(messages=messages, count=len(messages))


async def read_message(call: RouteCall) -> SmsInboxMessage:
    found = (
        await InboundSms.select()
        .where((InboundSms.id == call.params["id"]) & (InboundSms.agent_id == call.agent_id))
        .first()
    )
    if found is None:
        raise Refusal("not_found", "No such text in your SMS inbox.", status=404)
    return message_of(found)


TAGS = ("sms",)
INBOX_ROUTES = (
    Route(
        method="GET",
        path="/v1/tools/sms/inbox",
        name="sms_inbox",
        title="List your SMS inbox",
        description="Texts sent back to the service's number by people you texted, newest first: {messages, count}; "
        "limit 1 to 100 (default 20), offset.",
        handle=list_messages,
        auth="read",
        private=True,
        rate_limit="free_read",
        answer_type=SmsInboxPage,
        tags=TAGS,
        mcp=True,
        query=(LIMIT, OFFSET),
    ),
    Route(
        method="GET",
        path="/v1/tools/sms/inbox/{id}",
        name="sms_inbox_message",
        title="Read one text",
        description="One text of your SMS inbox, by its id.",
        handle=read_message,
        auth="read",
        private=True,
        rate_limit="free_read",
        answer_type=SmsInboxMessage,
        tags=TAGS,
        mcp=True,
    ),
)
