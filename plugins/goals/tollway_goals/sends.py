"""What a session sends through the service's tools, and what answers it. When a session's
call of `sms_send`, `voice_call` or `email_send` succeeds, each message it sent is recorded
(`goals_sent`: the delegated call's request id, the provider's id — Twilio's message or call
SID, the email's Message-ID — and the number or address it went to) in the transaction that
stores the call's result. An inbound message that answers one is written to the session that
sent it and wakes that session, no other: a text (`in_reply_to` is the SID of the text it
answers: the telephony plugin threads a text from the number texted, to the number it went
from), a call's final outcome (`in_reply_to` is the call's SID), an email (its In-Reply-To or
References names the Message-ID)."""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Any

from tollway import InboundMessage, storage

from .cases import wake
from .goals import add_message
from .ids import new_id, now_ms
from .tables import Sent

# The service's tools whose messages can be answered, with the inbound channel that answers them.
CHANNELS = types.MappingProxyType({"sms_send": "sms", "voice_call": "voice", "email_send": "email"})
MAX_TEXT = 4000


def sent_by(tool: str, args: Mapping[str, Any], output: Any) -> list[tuple[str, str]]:
    """(provider id, recipient) of each message a successful call of `tool` sent."""
    if not isinstance(output, Mapping):
        return []
    if tool == "sms_send":
        return [(m["sid"], m["to"]) for m in output.get("messages") or () if m.get("sid")]
    if tool == "voice_call":
        return [(output["sid"], str(args.get("to") or ""))] if output.get("sid") else []
    if tool == "email_send":
        return [(output["message_id"], output["to"])] if output.get("message_id") else []
    return []


async def record(where: Any, tool: str, request_id: str, args: Mapping[str, Any], output: Any) -> None:
    """Record the messages a session's call of `tool` sent (in the caller's transaction)."""
    channel = CHANNELS.get(tool)
    if channel is None:
        return
    now = now_ms()
    for provider_id, recipient in sent_by(tool, args, output):
        await Sent.insert(
            Sent(
                id=new_id("snt"),
                request_id=request_id,
                goal_id=where.goal["id"],
                case_id=where.case_id,
                session_id=where.session_id,
                tool=tool,
                channel=channel,
                provider_id=str(provider_id)[:255],
                recipient=str(recipient)[:320],
                created_ms=now,
            )
        )


async def sent_with(channel: str, provider_ids: Iterable[str]) -> dict[str, Any] | None:
    """The recorded message of `channel` with the first of `provider_ids` a session sent."""
    for provider_id in provider_ids:
        found = await Sent.select().where(Sent.channel == channel, Sent.provider_id == provider_id).first()
        if found is not None:
            return found
    return None


async def answering(message: InboundMessage) -> dict[str, Any] | None:
    """The text or call a session sent that a text or a call's outcome answers: by
    `in_reply_to`, from the number it went to (an email is threaded in `inbound`)."""
    if message.channel not in ("sms", "voice") or not message.in_reply_to:
        return None
    found = await sent_with(message.channel, (message.in_reply_to,))
    if found is None or found["recipient"] != message.sender:
        return None
    return found


def note(sent: Mapping[str, Any], message: InboundMessage) -> tuple[str, str]:
    """(source, text) of what the session is told."""
    text = message.text[:MAX_TEXT]
    if sent["channel"] == "sms":
        return "sms", f"Text from {message.sender}, replying to the text you sent it ({sent['tool']}): {text}"
    if sent["channel"] == "voice":
        return "call", f"Result of the call you placed to {sent['recipient']}: {message.subject}. {text}"
    return (
        "email",
        f"Email from {message.sender}, replying to the email you sent to {sent['recipient']}, subject "
        f"{message.subject!r}: {text}",
    )


async def to_sender(sent: Mapping[str, Any], message: InboundMessage, platform: Any) -> None:
    """Write `message` to the session that sent `sent` and wake it."""
    source, text = note(sent, message)
    extra = {
        "channel": message.channel,
        "message_id": message.message_id,
        "answers": sent["provider_id"],
        "request_id": sent["request_id"],
    }
    async with storage.transaction():
        await add_message(sent["session_id"], source, text, extra)
        await wake(sent["session_id"])
    await platform.publish("tollway_goal_sessions", sent["goal_id"])
