"""The webhooks Twilio posts to (public routes, answered in TwiML): the status callbacks of
messages and calls, and incoming SMS. Each is checked before anything changes: the
`X-Twilio-Signature` must be the signature (`twilio.signature`) of the URL Twilio was given,
the public URL of the kind (`TOLLWAY_SMS_PUBLIC_URL`, `TOLLWAY_VOICE_PUBLIC_URL`) plus the
path and query, and of the posted parameters, under a configured auth token. A missing or
wrong signature is answered 403 and ignored."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from tollway import Page, Route, RouteCall

from . import inbox, numbers, sms_tool, voice_tool
from .settings import DEFAULT_PUBLIC_URL, INBOUND_CALL_PATH, INBOUND_SMS_PATH, STATUS_PATH
from .twilio import account_of, signed_by

log = logging.getLogger("tollway.telephony")
XML = "text/xml"
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
# An agent's number takes texts; a caller hears so (nothing is recorded).
CALL_TWIML = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Say>This number takes text messages only. '
    "Please send a text.</Say><Hangup/></Response>"
)
MAX_BODY = 64 * 1024
TAGS = ("telephony webhooks",)


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def refusal_page(exc: Refused) -> Page:
    return Page(
        f'<?xml version="1.0" encoding="UTF-8"?><Error>{escape(exc.message)}</Error>', status=exc.status, media_type=XML
    )


def form_of(call: RouteCall) -> list[tuple[str, str]]:
    """The posted parameters, in order (Twilio posts application/x-www-form-urlencoded)."""
    raw = call.request.body
    if len(raw) > MAX_BODY:
        raise Refused(400, "The body is over 64 KB.")
    try:
        return parse_qsl(raw.decode("utf-8"), keep_blank_values=True)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(400, "The body is not a form Twilio would post.") from exc


def verified_account(call: RouteCall, params: list[tuple[str, str]], kinds: tuple[str, ...]) -> str:
    """The account SID whose auth token signed this request (the kinds' settings, in order)."""
    header = call.request.header("x-twilio-signature")
    if not header:
        raise Refused(403, "The request has no X-Twilio-Signature.")
    query = call.request.url.partition("?")[2]
    for kind in kinds:
        settings = call.platform.settings(kind)
        account = account_of(settings)
        if account is None:
            continue
        base = (str(settings.get("public_url") or "").strip() or DEFAULT_PUBLIC_URL).rstrip("/")
        url = f"{base}{call.request.path}" + (f"?{query}" if query else "")
        if signed_by(account[1], url, params, header):
            return account[0]
    raise Refused(403, "The X-Twilio-Signature does not match this request under the configured Twilio account.")


async def status(call: RouteCall) -> Page:
    try:
        form = form_of(call)
        params = dict(form)
        is_call = "CallSid" in params and "MessageSid" not in params and "SmsSid" not in params
        account = verified_account(call, form, ("voice", "sms") if is_call else ("sms", "voice"))
    except Refused as exc:
        log.warning("twilio status callback refused: %s", exc.message)
        return refusal_page(exc)
    if params.get("AccountSid", account) == account:
        ref = call.query.get("ref", "")
        handled = await (voice_tool.on_status if is_call else sms_tool.on_status)(call.platform, params, ref)
        log.info(
            "twilio status %s %s: %s",
            params.get("CallSid") or params.get("MessageSid"),
            params.get("CallStatus") or params.get("MessageStatus"),
            "recorded" if handled else "nothing to change",
        )
    return Page(EMPTY_TWIML, media_type=XML)


async def inbound_sms(call: RouteCall) -> Page:
    try:
        form = form_of(call)
        account = verified_account(call, form, ("sms", "voice"))
    except Refused as exc:
        log.warning("twilio inbound sms refused: %s", exc.message)
        return refusal_page(exc)
    params = dict(form)
    if params.get("AccountSid", account) == account and params.get("MessageSid") and params.get("From"):
        await inbox.receive(call.platform, form, call.request.body)
    return Page(EMPTY_TWIML, media_type=XML)


async def inbound_call(call: RouteCall) -> Page:
    try:
        form = form_of(call)
        account = verified_account(call, form, ("voice", "sms"))
    except Refused as exc:
        log.warning("twilio inbound call refused: %s", exc.message)
        return refusal_page(exc)
    params = dict(form)
    if params.get("AccountSid", account) == account and params.get("CallSid") and params.get("From"):
        agent_id = await numbers.incoming_call(call.platform, params, call.request.body)
        log.info("twilio inbound call %s: %s", params.get("CallSid"), "an agent's number" if agent_id else "no agent's")
    return Page(CALL_TWIML, media_type=XML)


def _route(path: str, name: str, title: str, description: str, handle: Any) -> Route:
    return Route(
        method="POST",
        path=path,
        name=name,
        title=title,
        description=description,
        handle=handle,
        auth="public",
        rate_limit=None,
        page=True,
        media_type=XML,
        tags=TAGS,
        statuses=(400, 403),
    )


WEBHOOK_ROUTES = (
    _route(
        STATUS_PATH,
        "twilio_status_callback",
        "Twilio status callback",
        "Twilio posts a message's or a call's status here (the StatusCallback the tools give it). Signed with "
        "X-Twilio-Signature; answered with empty TwiML, or 403 when the signature is missing or wrong (nothing changes).",
        status,
    ),
    _route(
        INBOUND_SMS_PATH,
        "twilio_inbound_sms",
        "Twilio incoming SMS",
        "Set this as the service number's incoming-message webhook (HTTP POST) in Twilio: each text is kept for the "
        "agent that last texted its sender, and handed to the service's inbound handlers. Signed with "
        "X-Twilio-Signature; answered with empty TwiML (no reply is sent), or 403 when the signature is missing or wrong.",
        inbound_sms,
    ),
    _route(
        INBOUND_CALL_PATH,
        "twilio_inbound_call",
        "Twilio incoming call",
        "The incoming-call webhook of the agents' own numbers (set by the service when it buys one): the call is "
        "handed to the service's inbound handlers for the agent owning the number, and the caller hears that the "
        "number takes texts. Signed with X-Twilio-Signature; 403 when the signature is missing or wrong.",
        inbound_call,
    ),
)
