"""`sms_send` (POST /v1/tools/sms/send, 0.03 USDC a call, a job): one text to 1 to 10
numbers, one Twilio message per recipient. Twilio's status callbacks keep each message's
status; once every message is final (delivered, undelivered, failed or canceled) the agent
gets one `sms_completed` notification with the batch's summary."""

from __future__ import annotations

import secrets
from collections import Counter
from typing import Annotated, Any, cast

import msgspec
from msgspec import UNSET, Meta, UnsetType
from piccolo.query.functions import Coalesce

from tollway import AdmissionChecks, Example, FieldError, JobDeclaration, Refusal, Tool, ToolContext, ToolError, now_ms

from .numbers import number_for
from .settings import SMS_PUBLIC_URL, status_callback, thread_id
from .tables import SmsBatch, SmsMessage, unless_moved
from .twilio import SmsClient

FAMILY = "sms"
PRICE = 30_000  # 0.03 USDC per call, whatever the number of recipients
MAX_RECIPIENTS = 10
E164 = r"^\+[1-9][0-9]{6,14}$"
PhoneNumber = Annotated[
    str, Meta(pattern=E164, description="E.164: a plus sign, the country code and the number, e.g. +14155550123.")
]
# Twilio's message statuses in the order they happen; a status never moves back (callbacks
# may arrive out of order), and a final one never changes.
RANK = {
    "pending": 0,
    "accepted": 1,
    "scheduled": 1,
    "queued": 2,
    "sending": 3,
    "sent": 4,
    "delivered": 5,
    "undelivered": 5,
    "failed": 5,
    "canceled": 5,
}
FINAL = frozenset({"delivered", "undelivered", "failed", "canceled"})


class SmsSendInput(msgspec.Struct, forbid_unknown_fields=True):
    """One text to up to ten numbers."""

    to: Annotated[
        list[PhoneNumber],
        Meta(min_length=1, max_length=MAX_RECIPIENTS, description="1 to 10 recipients, each in E.164, each once."),
    ]
    body: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=1600,
            description="The text, 1 to 1600 characters (a long text goes as several segments).",
        ),
    ]


class SmsSendMessage(msgspec.Struct, omit_defaults=True):
    """One recipient's message: our id (what an inbound reply names as related_outbound_id),
    Twilio's SID (None when it was never sent) and its latest status."""

    id: str
    to: str
    sid: str | None
    status: str
    error_code: str | UnsetType = UNSET  # Twilio's error code (21211, 30003, ...), or ours when it was never sent
    error_message: str | UnsetType = UNSET


class SmsSendResult(msgspec.Struct):
    messages: list[SmsSendMessage]


def check(value: SmsSendInput) -> None:
    seen: set[str] = set()
    for number in value.to:
        if number in seen:
            raise FieldError("to", f"lists {number} more than once")
        seen.add(number)


def message_of(r: dict[str, Any]) -> SmsSendMessage:
    out = SmsSendMessage(id=r["id"], to=r["recipient"], sid=r["sid"], status=r["status"])
    if r["error_code"]:
        out.error_code = r["error_code"]
    if r["error_message"]:
        out.error_message = r["error_message"]
    return out


async def _messages(request_id: str) -> list[dict[str, Any]]:
    return await SmsMessage.select().where(SmsMessage.request_id == request_id).order_by(SmsMessage.position)


async def _change_message(message_id: str, values: dict[Any, Any]) -> None:
    await SmsMessage.update({**values, SmsMessage.updated_ms: now_ms()}).where(SmsMessage.id == message_id)


async def _change_batch(request_id: str, values: dict[Any, Any]) -> None:
    await SmsBatch.update(values).where(SmsBatch.request_id == request_id)


async def _not_sent(message_id: str, code: str, message: str) -> None:
    await _change_message(
        message_id, {SmsMessage.status: "failed", SmsMessage.error_code: code, SmsMessage.error_message: message[:500]}
    )


async def run(value: SmsSendInput, ctx: ToolContext) -> SmsSendResult:
    """Send what is not sent yet (a second attempt after a worker crash finds the rows of the
    first); a refused number fails its own message, a provider failure stops the batch."""
    ctx.check_content(value.body)
    client = cast(SmsClient, ctx.provider("sms"))  # counts the first message's cost; each further one is counted below
    sender = await number_for(ctx, client)  # the agent's own number (bought on first use), or the configured one
    ctx.provider_cost = (ctx.provider_cost or 0) + sender.cost  # the number's months this send carries
    base = ctx.setting(SMS_PUBLIC_URL)
    agent_id = ctx.agent_id or ""
    now = now_ms()
    await SmsBatch.insert(
        SmsBatch(
            request_id=ctx.request_id,
            agent_id=agent_id,
            recipients=len(value.to),
            state="sending",
            notified_ms=None,
            created_ms=now,
            updated_ms=now,
        )
    ).on_conflict(target=SmsBatch.request_id, action="DO NOTHING")
    for position, number in enumerate(value.to):
        await SmsMessage.insert(
            SmsMessage(
                id=f"sms_{secrets.token_hex(12)}",
                request_id=ctx.request_id,
                position=position,
                agent_id=agent_id,
                sender=sender.number,
                recipient=number,
                thread_id=thread_id(agent_id, number),
                sid=None,
                status="pending",
                error_code=None,
                error_message=None,
                sent_ms=None,
                created_ms=now,
                updated_ms=now,
            )
        ).on_conflict(target=(SmsMessage.request_id, SmsMessage.position), action="DO NOTHING")
    stopped: ToolError | None = None
    refused: Refusal | None = None
    accepted = 0
    for message in await _messages(ctx.request_id):
        if message["sid"] is not None or message["status"] != "pending":
            continue  # sent (or refused) by an earlier attempt
        if stopped is not None:
            await _not_sent(message["id"], stopped.code, f"Not sent: {stopped.message}")
            continue
        try:
            created = await client.send_sms(
                to=message["recipient"],
                body=value.body,
                status_callback=status_callback(base, message["id"]),
                from_number=message["sender"],
            )
        except Refusal as exc:  # Twilio will not reach this number: this message fails, the others go on
            refused = refused or exc
            await _not_sent(message["id"], str(exc.extra.get("twilio_code") or exc.code), exc.message)
            continue
        except ToolError as exc:  # credentials, rate limit, Twilio down: nothing more goes out
            stopped = exc
            await _not_sent(message["id"], exc.code, f"Not sent: {exc.message}")
            continue
        accepted += 1
        if accepted > 1:
            ctx.provider("sms")  # the cost of one more message
        stamp = now_ms()
        taken = created.status.lower() if created.status.lower() in RANK else "queued"
        await SmsMessage.update(
            {
                SmsMessage.sid: created.sid,
                SmsMessage.status: unless_moved(SmsMessage.status, taken),
                SmsMessage.sent_ms: stamp,
                SmsMessage.updated_ms: stamp,
            }
        ).where(SmsMessage.id == message["id"])
    final = await _messages(ctx.request_id)
    if not any(m["sid"] for m in final):
        await _change_batch(ctx.request_id, {SmsBatch.state: "failed", SmsBatch.updated_ms: now_ms()})
        raise stopped or refused or ToolError("provider_unavailable", "No message was sent.", status=503)
    await _change_batch(ctx.request_id, {SmsBatch.state: "sent", SmsBatch.updated_ms: now_ms()})
    return SmsSendResult(messages=[message_of(m) for m in final])


async def job_extras(request_id: str) -> dict[str, Any] | None:
    """Once sent, the Job's result shows each message's latest status (from the callbacks)."""
    batch = await SmsBatch.select(SmsBatch.state).where(SmsBatch.request_id == request_id).first()
    if batch is None or batch["state"] != "sent":
        return None
    return {"result": msgspec.to_builtins(SmsSendResult(messages=[message_of(m) for m in await _messages(request_id)]))}


# -- status callbacks ----------------------------------------------------------------------
async def on_status(platform: Any, params: dict[str, str], ref: str) -> bool:
    """A message's status callback: its status moves forward; when it makes every message of
    its batch final, `sms_completed` is written (once: the batch row is locked meanwhile)."""
    sid = params.get("MessageSid") or params.get("SmsSid") or ""
    status = (params.get("MessageStatus") or params.get("SmsStatus") or "").strip().lower()
    if status not in RANK or status == "pending":
        return False
    found = None
    if ref.startswith("sms_") or sid:
        which = SmsMessage.id == ref if ref.startswith("sms_") else SmsMessage.sid == sid
        found = await SmsMessage.select(SmsMessage.id, SmsMessage.request_id, SmsMessage.sid).where(which).first()
    if found is None or (found["sid"] and sid and found["sid"] != sid):
        return False
    error_code = (params.get("ErrorCode") or "").strip()[:40] or None
    async with platform.transaction():
        await _change_batch(found["request_id"], {SmsBatch.updated_ms: now_ms()})  # the batch's lock
        current = await SmsMessage.select(SmsMessage.status).where(SmsMessage.id == found["id"]).first()
        if current is None or current["status"] in FINAL or RANK[status] <= RANK.get(current["status"], 0):
            return False
        await _change_message(
            found["id"],
            {
                SmsMessage.status: status,
                SmsMessage.sid: Coalesce(SmsMessage.sid, sid or None),
                SmsMessage.error_code: Coalesce(error_code, SmsMessage.error_code),
            },
        )
        if status in FINAL:
            await _settle(platform, found["request_id"])
    return True


async def _settle(platform: Any, request_id: str) -> None:
    batch = await SmsBatch.select().where(SmsBatch.request_id == request_id).first()
    if batch is None or batch["notified_ms"] is not None:
        return
    messages = await _messages(request_id)
    if not messages or any(m["status"] not in FINAL for m in messages):
        return
    await _change_batch(request_id, {SmsBatch.notified_ms: now_ms()})
    counts = Counter(m["status"] for m in messages)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("delivered", "undelivered", "failed", "canceled") if counts[s])
    plural = "s" if len(messages) > 1 else ""
    await platform.notify(
        batch["agent_id"],
        "sms_completed",
        f"SMS to {len(messages)} number{plural}: {summary}",
        f"Every message of request {request_id} has its final status: {summary}.",
        {
            "jobId": request_id,
            "tool": "sms_send",
            "counts": {s: counts[s] for s in sorted(counts)},
            "messages": [msgspec.to_builtins(message_of(m)) for m in messages],
        },
    )


SMS_SEND = Tool(
    name="sms_send",
    path="/v1/tools/sms/send",
    title="Send an SMS",
    summary="Sends one text to 1 to 10 phone numbers (one message each) and reports each message's delivery.",
    description=(
        "Send one text (1 to 1600 characters) to 1 to 10 phone numbers in E.164, one message per recipient, from your "
        "own number (bought on your first text or call unless the operator shares one number; released after a long "
        "idle stretch, with a phone_expiring notification first). Runs as a job whose result lists each message {id, to, sid, status}; the statuses follow "
        "the carrier's delivery reports, and once every message is final (delivered, undelivered, failed) an "
        "sms_completed notification gives the summary. A number the carrier network refuses fails its own message; "
        "when no message could be sent the job fails and the payment is refunded. Replies to your number reach your "
        "SMS inbox."
    ),
    category="communication",
    subcategory="sms",
    input_type=SmsSendInput,
    output_type=SmsSendResult,
    run=run,
    price=PRICE,
    family=FAMILY,
    idempotency="optional",
    rate_limit="paid",
    time_limit_s=150.0,
    job=JobDeclaration(accepted_status="queued", job_extras=job_extras),
    admission=AdmissionChecks(check=check, provider_kind="sms"),
    examples=(
        Example(
            title="A reminder to two numbers",
            input={"to": ["+14155550123", "+14155550124"], "body": "Your table for 4 is booked for 7 pm tonight."},
        ),
    ),
)
