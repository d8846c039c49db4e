"""Questions to people. `ask_person` writes the ask on the case and sends the question by
email (the `email` provider); an approval carries a signed single-use link to a page
showing exactly what is approved, and only the click on that page approves — a reply never
does. A click or a reply is written on the record and wakes the session that asked."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from tollway import storage

from .approval_links import make_token, shown_hash
from .case_tools import CallRefused, Outcome, Where
from .cases import wake
from .ending import OPEN_ASKS
from .goals import add_message
from .ids import iso, now_ms
from .inbound import reply_address
from .secrets_store import key
from .settings import FAMILY, PUBLIC_URL
from .tables import Ask, Goal

DEFAULT_DEADLINE_S = 7 * 24 * 3600
MAX_CHASES = 3
_ADDRESS = re.compile(r"^[^@\s<>]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$|^[^@\s<>]{1,64}@localhost$")
ASK_PERSON = {
    "type": "function",
    "function": {
        "name": "ask_person",
        "description": (
            "Ask a named person by email. kind=answer: a question whose reply is written on the case. kind=approval: the person "
            "gets a signed link to a page showing exactly `shown` (what you want approved, e.g. the result you will deliver); only "
            "their click approves it. Options: chase_after_seconds (up to 3 reminders), deadline_seconds (default 7 days)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "person_name": {"type": "string"},
                "person_address": {"type": "string"},
                "question": {"type": "string"},
                "kind": {"type": "string", "enum": ["answer", "approval"]},
                "shown": {"type": "object"},
                "chase_after_seconds": {"type": "integer", "minimum": 60},
                "deadline_seconds": {"type": "integer", "minimum": 60},
            },
            "required": ["person_name", "person_address", "question", "kind"],
            "additionalProperties": False,
        },
    },
}


def public_url(platform: Any) -> str:
    return (platform.settings(FAMILY).get(PUBLIC_URL.name) or PUBLIC_URL.default or "").rstrip("/")


async def ask_person(where: Where, args: Mapping[str, Any], platform: Any) -> tuple[Outcome, dict[str, Any]]:
    """Write the ask (in the caller's transaction); what to send once it commits."""
    if where.case_id is None:
        raise CallRefused("ask_person is for a case's session: the answer is written on the case")
    name, address, question, kind = (args.get(k) for k in ("person_name", "person_address", "question", "kind"))
    if not all(isinstance(v, str) and v.strip() for v in (name, address, question)) or kind not in (
        "answer",
        "approval",
    ):
        raise CallRefused("person_name, person_address, question and kind (answer or approval) are required")
    if not _ADDRESS.match(address.strip()):
        raise CallRefused("person_address must be an email address")
    shown = args.get("shown")
    if kind == "approval" and not isinstance(shown, dict):
        raise CallRefused("an approval needs `shown`: the object the person approves")
    deadline_s = int(args.get("deadline_seconds") or DEFAULT_DEADLINE_S)
    chase_s = args.get("chase_after_seconds")
    now = now_ms()
    ask_id = str(uuid.uuid4())
    digest = shown_hash(shown) if kind == "approval" else None
    deadline_ms = now + deadline_s * 1000
    await Ask.insert(
        Ask(
            id=ask_id,
            case_id=where.case_id,
            goal_id=where.goal["id"],
            session_id=where.session_id,
            kind=kind,
            status="sending",
            person_name=name.strip()[:200],
            person_address=address.strip(),
            question=question[:4000],
            shown=storage.dumps(shown) if shown is not None else None,
            shown_hash=digest,
            chase_after_s=chase_s,
            chases=0,
            next_chase_ms=now + chase_s * 1000 if chase_s else None,
            deadline_ms=deadline_ms,
            escalated_ms=None,
            answer=None,
            message_id=None,
            created_ms=now,
            updated_ms=now,
        )
    )
    link = None
    if kind == "approval":
        token = make_token(await key(), ask_id, digest, deadline_ms // 1000)
        link = f"{public_url(platform)}/v1/approvals/{token}"
    outgoing = {
        "ask_id": ask_id,
        "to": address.strip(),
        "name": name.strip(),
        "question": question,
        "kind": kind,
        "link": link,
        "agent_id": where.goal["agent_id"],
    }
    return Outcome({"ok": True, "ask_id": ask_id, "kind": kind, "deadline_at": iso(deadline_ms)}), outgoing


def message_text(outgoing: Mapping[str, Any], *, reminder: int = 0) -> tuple[str, str]:
    prefix = f"Reminder {reminder}: " if reminder else ""
    if outgoing["kind"] == "approval":
        subject = f"{prefix}Approval needed"
        text = (
            f"Hello {outgoing['name']},\n\n{outgoing['question']}\n\nOpen this link to see exactly what you are asked to approve, "
            f"and approve it there:\n\n{outgoing['link']}\n\nReplying to this message does not approve anything.\n"
        )
    else:
        subject = f"{prefix}A question for you"
        text = f"Hello {outgoing['name']},\n\n{outgoing['question']}\n\nReply to this message to answer.\n"
    return subject, text


async def send(platform: Any, outgoing: Mapping[str, Any]) -> None:
    """Email the question (after the ask committed); the Message-ID is kept for threading.
    When it cannot be sent the ask says so and the session is told (it may ask otherwise)."""
    subject, text = message_text(outgoing)
    try:
        client, _cost = platform.provider("email")
        message_id = await client.send(
            to=outgoing["to"],
            subject=subject,
            text=text,
            reply_to=reply_address(client.from_address, outgoing["agent_id"]),
        )
    except Exception as exc:  # no provider, or the relay refused: the session reads why
        why = (
            getattr(exc, "message", None)
            or "no email provider is configured (TOLLWAY_EMAIL_HOST, TOLLWAY_EMAIL_FROM_ADDRESS)"
        )
        async with storage.transaction():
            failed = (
                await Ask.update(
                    {
                        Ask.status: "undeliverable",
                        Ask.answer: storage.dumps({"error": str(why)[:500]}),
                        Ask.updated_ms: now_ms(),
                    }
                )
                .where(
                    Ask.id == outgoing["ask_id"],
                    Ask.status == "sending",
                )
                .returning(Ask.session_id)
            )
            for ask in failed:
                await add_message(
                    ask["session_id"],
                    "ask_failed",
                    f"Ask {outgoing['ask_id']} could not be sent: {why}",
                    {"ask_id": outgoing["ask_id"]},
                )
                await wake(ask["session_id"])
        return
    await Ask.update({Ask.status: "sent", Ask.message_id: message_id, Ask.updated_ms: now_ms()}).where(
        Ask.id == outgoing["ask_id"],
        Ask.status == "sending",
    )


async def approve(ask: Mapping[str, Any], shown_hash_seen: str) -> dict[str, Any] | None:
    """Record the click, once (in the caller's transaction): None when it was used already."""
    now = now_ms()
    answer = {
        "who": ask["person_address"],
        "name": ask["person_name"],
        "when": iso(now),
        "via": "link",
        "shown": storage.loads(ask["shown"]),
        "shown_hash": shown_hash_seen,
    }
    approved = (
        await Ask.update({Ask.status: "approved", Ask.answer: storage.dumps(answer), Ask.updated_ms: now})
        .where(
            Ask.id == ask["id"],
            Ask.status.is_in(list(OPEN_ASKS)),
        )
        .returning(Ask.id)
    )
    if not approved:
        return None
    await add_message(
        ask["session_id"],
        "approval",
        f"{ask['person_name']} approved ask {ask['id']} (what was shown: {json.dumps(answer['shown'], sort_keys=True)}).",
        {"ask_id": ask["id"]},
    )
    await wake(ask["session_id"])
    return answer


async def latest_approval(case_id: str) -> dict[str, Any] | None:
    return (
        await Ask.select()
        .where(Ask.case_id == case_id, Ask.kind == "approval")
        .order_by(Ask.created_ms, Ask.id, ascending=False)
        .first()
    )


async def follow_up(platform: Any, now: int | None = None) -> dict[str, int]:
    """Chase asks whose reminder is due (at most three), and tell the session of an ask whose
    deadline passed to escalate. Each is claimed by a guarded update, so two workers never
    send the same reminder."""
    now = now_ms() if now is None else now
    chased = escalated = 0
    due = await Ask.select().where(
        Ask.status.is_in(["sent", "chased"]),
        Ask.next_chase_ms.is_not_null(),
        Ask.next_chase_ms <= now,
        Ask.chases < MAX_CHASES,
        Ask.deadline_ms > now,
    )
    for ask in due:
        chases = int(ask["chases"]) + 1
        following = now + int(ask["chase_after_s"]) * 1000 if chases < MAX_CHASES and ask["chase_after_s"] else None
        claimed = (
            await Ask.update(
                {Ask.status: "chased", Ask.chases: chases, Ask.next_chase_ms: following, Ask.updated_ms: now}
            )
            .where(
                Ask.id == ask["id"],
                Ask.chases == chases - 1,
            )
            .returning(Ask.id)
        )
        if not claimed:
            continue
        outgoing = {
            "ask_id": ask["id"],
            "to": ask["person_address"],
            "name": ask["person_name"],
            "question": ask["question"],
            "kind": ask["kind"],
            "link": None,
        }
        if ask["kind"] == "approval":
            outgoing["link"] = (
                f"{public_url(platform)}/v1/approvals/{make_token(await key(), ask['id'], ask['shown_hash'], int(ask['deadline_ms']) // 1000)}"
            )
        subject, text = message_text(outgoing, reminder=chases)
        try:
            client, _cost = platform.provider("email")
            goal = await Goal.select(Goal.agent_id).where(Goal.id == ask["goal_id"]).first()
            await client.send(
                to=ask["person_address"],
                subject=subject,
                text=text,
                in_reply_to=ask["message_id"],
                reply_to=reply_address(client.from_address, goal["agent_id"]) if goal else None,
            )
            chased += 1
        except Exception:  # the next reminder, or the deadline, follows all the same
            continue
    for ask in await Ask.select().where(
        Ask.status.is_in(list(OPEN_ASKS)), Ask.deadline_ms <= now, Ask.escalated_ms.is_null()
    ):
        async with storage.transaction():
            claimed = (
                await Ask.update({Ask.status: "expired", Ask.escalated_ms: now, Ask.updated_ms: now})
                .where(
                    Ask.id == ask["id"],
                    Ask.escalated_ms.is_null(),
                )
                .returning(Ask.id)
            )
            if not claimed:
                continue
            await add_message(
                ask["session_id"],
                "deadline",
                f"No answer from {ask['person_name']} to ask {ask['id']} by its deadline: escalate.",
                {"ask_id": ask["id"]},
            )
            await wake(ask["session_id"])
            escalated += 1
    return {"chased": chased, "escalated": escalated}
