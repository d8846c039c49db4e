"""Replies from people: an inbound message that answers one a session sent reaches that
session and no other goal. An email is threaded by Message-ID, In-Reply-To and References:
a reply to a question is written on the ask (who, when, `via: reply`, the message), a reply
to an approval is passed on but approves nothing, and a reply to an email a session sent
with `email_send` is passed on to that session. A text that answers one a session sent with
`sms_send`, and the outcome of a call it placed with `voice_call`, wake that session
(`sends`). Mail that follows nothing a session sent, to an agent's own reply address, goes
to the root of that agent's newest running goal; a text or a call's outcome that follows
nothing a session sent is left to the others (the SMS inbox keeps the text)."""

from __future__ import annotations

from typing import Any

from tollway import InboundMessage, storage
from tollway.helpers import agent_address, agent_of_address

from . import sends
from .cases import root_session, wake
from .goals import add_message
from .ids import iso, now_ms
from .tables import Ask, Goal


def reply_address(from_address: str, agent_id: str) -> str:
    """The Reply-To of what a goal of `agent_id` sends: the agent's own address."""
    return agent_address(from_address, agent_id)


async def handle(message: InboundMessage, platform: Any) -> bool:
    if message.channel != "email":
        sent = await sends.answering(message)
        if sent is None:
            return False
        await sends.to_sender(sent, message, platform)
        return True
    for message_id in message.thread:
        ask = await Ask.select().where(Ask.message_id == message_id).first()
        if ask is not None:
            await _to_ask(ask, message)
            await platform.publish("tollway_goal_sessions", ask["goal_id"])
            return True
        sent = await sends.sent_with("email", (message_id,))
        if sent is not None:
            await sends.to_sender(sent, message, platform)
            return True
    return await _to_newest_root(message, platform)


async def _to_ask(ask: dict[str, Any], message: InboundMessage) -> None:
    source = {"message_id": message.message_id, "subject": message.subject, "text": message.text[:5000]}
    async with storage.transaction():
        if ask["kind"] == "answer":
            answer = {
                "who": message.sender,
                "when": iso(message.received_ms or now_ms()),
                "via": "reply",
                "message": source,
            }
            await Ask.update(
                {Ask.status: "answered", Ask.answer: storage.dumps(answer), Ask.updated_ms: now_ms()}
            ).where(
                Ask.id == ask["id"],
                Ask.status.is_in(["sent", "chased", "expired"]),
            )
            note = f"{message.sender} replied to ask {ask['id']}: {message.text[:4000]}"
        else:
            note = (
                f"{message.sender} replied by email to approval ask {ask['id']} (a reply approves nothing; only the link's "
                f"button does): {message.text[:4000]}"
            )
        await add_message(ask["session_id"], "reply", note, {"ask_id": ask["id"], "message_id": message.message_id})
        await wake(ask["session_id"])


async def _to_newest_root(message: InboundMessage, platform: Any) -> bool:
    agent_id = next((a for a in map(agent_of_address, message.recipients) if a), None)
    if agent_id is None:
        return False
    goal = (
        await Goal.select(Goal.id)
        .where(Goal.agent_id == agent_id, Goal.status == "running")
        .order_by(Goal.seq, ascending=False)
        .first()
    )
    if goal is None:
        return False
    async with storage.transaction():
        session = await root_session(goal["id"])
        await add_message(
            session,
            "email",
            f"Email from {message.sender}, subject {message.subject!r}: {message.text[:4000]}",
            {"message_id": message.message_id},
        )
        await wake(session)
    await platform.publish("tollway_goal_sessions", goal["id"])
    return True
