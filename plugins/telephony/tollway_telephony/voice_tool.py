"""`voice_call` (POST /v1/tools/voice/call, 0.10 USDC a call, a job): Twilio calls one number
and speaks a message (TwiML `<Response><Say>…</Say></Response>`, the text XML-escaped).
When Twilio's status callback reports the call ended, the call is evaluated, the agent
gets one `voice_completed` notification, and the outcome is handed once to the service's
inbound handlers (`call_result`: a goal whose session placed the call takes it).

The evaluation is deliberately simple and says what it measures: the call succeeded when it
was answered (`completed`, not busy, unanswered, failed or canceled; not a machine when
Twilio says so) and lasted at least as long as the message takes to say at a brisk 3 words
a second (never less than 2 s), so someone stayed on the line to hear it. A one-way call
hears nothing back: a `goal` ("the person confirms the appointment") is kept and repeated,
never judged."""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, cast
from xml.sax.saxutils import escape

import msgspec
from msgspec import UNSET, Meta, UnsetType
from piccolo.query.functions import Coalesce

from tollway import AdmissionChecks, Example, FieldError, InboundMessage, JobDeclaration, Tool, ToolContext, now_ms

from .numbers import number_for
from .settings import VOICE_PUBLIC_URL, status_callback
from .sms_tool import PhoneNumber
from .tables import VoiceCall, unless_moved
from .twilio import VoiceClient

FAMILY = "voice"
PRICE = 100_000  # 0.10 USDC per call
MAX_TWIML = 4000  # Twilio refuses a longer Twiml parameter (its error 32018)
WORDS_PER_S = 3.0
MIN_HEARD_S = 2
# Twilio's call statuses in the order they happen; the last five are final.
RANK = {
    "pending": 0,
    "queued": 1,
    "initiated": 2,
    "ringing": 3,
    "in-progress": 4,
    "completed": 5,
    "busy": 5,
    "no-answer": 5,
    "failed": 5,
    "canceled": 5,
}
FINAL = frozenset({"completed", "busy", "no-answer", "failed", "canceled"})
NOT_ANSWERED = {
    "busy": "the line was busy",
    "no-answer": "nobody answered",
    "failed": "the call could not be placed",
    "canceled": "the call was canceled before it was answered",
}
# Characters XML 1.0 cannot carry at all (escaping does not help): refused before payment.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class VoiceCallInput(msgspec.Struct, forbid_unknown_fields=True):
    """One call that speaks a message."""

    to: PhoneNumber
    message: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=2000,
            description="What the call says, 1 to 2000 characters of plain text (spoken as written).",
        ),
    ]
    goal: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=500,
                description="What would count as success, e.g. 'the person confirms the appointment': kept with the call's evaluation.",
            ),
        ]
        | None
    ) = None


class VoiceCallEvaluation(msgspec.Struct):
    success: bool
    reason: str


class VoiceCallResult(msgspec.Struct, omit_defaults=True):
    """Twilio's SID and the call's status; once it ended, how long it lasted and its evaluation."""

    sid: str
    status: str
    duration_s: int | UnsetType = UNSET
    evaluation: VoiceCallEvaluation | UnsetType = UNSET


def twiml(message: str) -> str:
    """The TwiML that says `message` (as text: `<`, `>` and `&` escaped)."""
    return f"<Response><Say>{escape(message)}</Say></Response>"


def check(value: VoiceCallInput) -> None:
    if _NOT_XML.search(value.message):
        raise FieldError("message", "contains control characters that cannot be spoken")
    size = len(twiml(value.message))
    if size > MAX_TWIML:
        raise FieldError(
            "message",
            f"is {size} characters once written as TwiML (& < > take several); Twilio takes at most {MAX_TWIML}",
        )


def words_of(message: str) -> int:
    return len(message.split())


def heard_s(words: int) -> int:
    """The seconds it takes to say `words` words at 3 a second (at least 2)."""
    return max(MIN_HEARD_S, math.ceil(words / WORDS_PER_S))


def evaluate(
    status: str, duration_s: int | None, answered_by: str | None, words: int, goal: str | None
) -> VoiceCallEvaluation:
    """Whether the message reached someone who stayed on the line long enough to hear it."""
    needed = heard_s(words)
    if status != "completed":
        success, reason = False, f"Not answered: {NOT_ANSWERED.get(status, status)}."
    elif answered_by and answered_by.startswith(("machine", "fax")):
        success, reason = False, f"Answered by a machine ({answered_by}), not a person."
    elif (duration_s or 0) < needed:
        success, reason = (
            False,
            f"Answered, but the call lasted {duration_s or 0} s: less than the {needed} s the message takes to say.",
        )
    else:
        success, reason = (
            True,
            f"Answered and lasted {duration_s} s, long enough to hear the whole message ({needed} s).",
        )
    if goal:
        reason += f" The goal ({goal!r}) was not checked: the call speaks the message and hears no answer."
    return VoiceCallEvaluation(success=success, reason=reason)


async def _change(request_id: str, values: dict[Any, Any]) -> None:
    await VoiceCall.update({**values, VoiceCall.updated_ms: now_ms()}).where(VoiceCall.request_id == request_id)


async def _call(request_id: str) -> dict[str, Any] | None:
    return await VoiceCall.select().where(VoiceCall.request_id == request_id).first()


async def run(value: VoiceCallInput, ctx: ToolContext) -> VoiceCallResult:
    """Place the call once (a second attempt after a worker crash answers the first's SID)."""
    ctx.check_content(value.message)
    client = cast(VoiceClient, ctx.provider("voice"))  # the kind's interface
    sender = await number_for(ctx, client)  # the agent's own number (bought on first use), or the configured one
    ctx.provider_cost = (ctx.provider_cost or 0) + sender.cost  # the number's months this call carries
    now = now_ms()
    await VoiceCall.insert(
        VoiceCall(
            request_id=ctx.request_id,
            agent_id=ctx.agent_id or "",
            sender=sender.number,
            recipient=value.to,
            goal=value.goal,
            words=words_of(value.message),
            sid=None,
            status="pending",
            duration_s=None,
            answered_by=None,
            evaluation=None,
            state="calling",
            notified_ms=None,
            created_ms=now,
            updated_ms=now,
        )
    ).on_conflict(target=VoiceCall.request_id, action="DO NOTHING")
    placed = (
        await VoiceCall.select(VoiceCall.sid, VoiceCall.status, VoiceCall.sender)
        .where(VoiceCall.request_id == ctx.request_id)
        .first()
    )
    if placed is not None and placed["sid"]:
        return VoiceCallResult(sid=placed["sid"], status=placed["status"])
    try:
        created = await client.call(
            to=value.to,
            twiml=twiml(value.message),
            status_callback=status_callback(ctx.setting(VOICE_PUBLIC_URL), ctx.request_id),
            from_number=placed["sender"] if placed is not None else sender.number,
        )
    except Exception:  # refused (an invalid number), or Twilio failed: the job fails and is refunded
        await _change(ctx.request_id, {VoiceCall.state: "failed"})
        raise
    status = created.status.lower() if created.status.lower() in RANK else "queued"
    await _change(
        ctx.request_id,
        {
            VoiceCall.sid: created.sid,
            VoiceCall.status: unless_moved(VoiceCall.status, status),
            VoiceCall.state: "placed",
        },
    )
    return VoiceCallResult(sid=created.sid, status=status)


def result_of(r: dict[str, Any]) -> VoiceCallResult:
    out = VoiceCallResult(sid=r["sid"], status=r["status"])
    if r["duration_s"] is not None:
        out.duration_s = int(r["duration_s"])
    if r["evaluation"]:
        out.evaluation = msgspec.convert(json.loads(r["evaluation"]), VoiceCallEvaluation)
    return out


async def job_extras(request_id: str) -> dict[str, Any] | None:
    """Once placed, the Job's result shows the call's latest status, and its length and
    evaluation once it ended."""
    call = await _call(request_id)
    if call is None or call["state"] != "placed" or not call["sid"]:
        return None
    return {"result": msgspec.to_builtins(result_of(call))}


# -- status callbacks ----------------------------------------------------------------------
async def on_status(platform: Any, params: dict[str, str], ref: str) -> bool:
    """A call's status callback: its status moves forward; a final one is evaluated,
    `voice_completed` written (once: the call's row is locked meanwhile) and, once that
    committed, the outcome handed to the inbound handlers (`call_result`)."""
    sid = params.get("CallSid") or ""
    status = (params.get("CallStatus") or "").strip().lower()
    if status not in RANK or status == "pending":
        return False
    found = None
    if ref.startswith("req_") or sid:
        which = VoiceCall.request_id == ref if ref.startswith("req_") else VoiceCall.sid == sid
        found = await VoiceCall.select(VoiceCall.request_id, VoiceCall.sid).where(which).first()
    if found is None or (found["sid"] and sid and found["sid"] != sid):
        return False
    raw_duration = (params.get("CallDuration") or "").strip()
    duration = int(raw_duration) if raw_duration.isdigit() and len(raw_duration) < 9 else None
    answered_by = (params.get("AnsweredBy") or "").strip().lower()[:40] or None
    request_id = found["request_id"]
    result: InboundMessage | None = None
    async with platform.transaction():
        await _change(request_id, {})  # the call's lock
        call = await _call(request_id)
        if call is None or call["status"] in FINAL or RANK[status] <= RANK.get(call["status"], 0):
            return False
        evaluation = None
        if status in FINAL:
            evaluation = evaluate(status, duration, answered_by, int(call["words"]), call["goal"])
        await _change(
            request_id,
            {
                VoiceCall.status: status,
                VoiceCall.sid: Coalesce(VoiceCall.sid, sid or None),
                VoiceCall.duration_s: Coalesce(duration, VoiceCall.duration_s),
                VoiceCall.answered_by: Coalesce(answered_by, VoiceCall.answered_by),
                VoiceCall.evaluation: None if evaluation is None else json.dumps(msgspec.to_builtins(evaluation)),
            },
        )
        if evaluation is not None and call["notified_ms"] is None:
            await VoiceCall.update({VoiceCall.notified_ms: now_ms()}).where(VoiceCall.request_id == request_id)
            verdict = "succeeded" if evaluation.success else "did not succeed"
            await platform.notify(
                call["agent_id"],
                "voice_completed",
                f"Call to {call['recipient']} {verdict} ({status})",
                evaluation.reason,
                {
                    "jobId": request_id,
                    "tool": "voice_call",
                    "sid": sid or call["sid"],
                    "to": call["recipient"],
                    "status": status,
                    "duration_s": duration,
                    "goal": call["goal"],
                    "evaluation": msgspec.to_builtins(evaluation),
                },
            )
            result = call_result(call, sid or call["sid"], status, duration, evaluation)
    if result is not None:
        await platform.deliver_inbound(result)
    return True


def call_result(
    call: dict[str, Any], sid: str, status: str, duration_s: int | None, evaluation: VoiceCallEvaluation
) -> InboundMessage:
    """A call's final outcome as an inbound message (channel `voice`, from the number called
    to the number it was placed from, `in_reply_to` the call's SID): what a goal's session
    that placed the call is woken with."""
    verdict = "succeeded" if evaluation.success else "did not succeed"
    return InboundMessage(
        channel="voice",
        sender=call["recipient"],
        recipients=(call["sender"],),
        subject=f"Call to {call['recipient']} {verdict} ({status}, {duration_s or 0} s)",
        text=evaluation.reason,
        message_id=None,
        in_reply_to=sid or None,
        received_ms=now_ms(),
    )


VOICE_CALL = Tool(
    name="voice_call",
    path="/v1/tools/voice/call",
    title="Place a voice call",
    summary="Calls one phone number and speaks your message; reports whether someone heard it.",
    description=(
        "Call one phone number (E.164) from your own number (the one your texts go from) and speak a message (1 to 2000 characters, read as "
        "plain text). Runs as a job whose result is {sid, status}; when the call ends, a voice_completed notification "
        "(and the job's result) gives its length and an evaluation {success, reason}: success means the call was "
        "answered and lasted long enough to hear the whole message. The optional goal is kept with the evaluation "
        "but not judged: the call speaks and hears no answer. A number the carrier network refuses fails the job and "
        "the payment is refunded."
    ),
    category="communication",
    subcategory="voice",
    input_type=VoiceCallInput,
    output_type=VoiceCallResult,
    run=run,
    price=PRICE,
    family=FAMILY,
    idempotency="optional",
    rate_limit="expensive",
    job=JobDeclaration(accepted_status="queued", job_extras=job_extras),
    admission=AdmissionChecks(check=check, provider_kind="voice"),
    examples=(
        Example(
            title="An appointment reminder",
            input={
                "to": "+14155550123",
                "message": "Hello, this is a reminder of your dental appointment tomorrow at 9 am.",
                "goal": "the person hears the reminder",
            },
        ),
    ),
)
