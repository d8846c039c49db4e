"""Where Twilio reaches the service: the public base URL each kind's status callbacks are
built on and Twilio's signatures are checked against, and the webhook paths."""

from __future__ import annotations

import hashlib

from tollway import Setting

DEFAULT_PUBLIC_URL = "http://127.0.0.1:8402"
SMS_PUBLIC_URL = Setting(
    "sms",
    "public_url",
    DEFAULT_PUBLIC_URL,
    "The service's public base URL as Twilio reaches it: message status callbacks go to it, and Twilio's webhooks are checked against it.",
)
# The voice tool reads its own family's settings, so calls have a variable of their own
# (set both to the same URL; the plugin warns at start-up when they differ).
VOICE_PUBLIC_URL = Setting(
    "voice",
    "public_url",
    DEFAULT_PUBLIC_URL,
    "The service's public base URL as Twilio reaches it for calls (normally the same as TOLLWAY_SMS_PUBLIC_URL).",
)
STATUS_PATH = "/v1/telephony/twilio/status"
INBOUND_SMS_PATH = "/v1/telephony/twilio/inbound-sms"
INBOUND_CALL_PATH = "/v1/telephony/twilio/inbound-call"


def status_callback(base_url: str | None, ref: str) -> str:
    """The StatusCallback of one message or call: `ref` names our row, so a callback that
    arrives before the SID is stored still finds it (the query is part of what Twilio signs)."""
    return f"{(base_url or DEFAULT_PUBLIC_URL).rstrip('/')}{STATUS_PATH}?ref={ref}"


def thread_id(agent_id: str | None, number: str) -> str:
    """The conversation of an agent with a phone number (unassigned messages: of the number alone)."""
    return "thr_" + hashlib.sha256(f"{agent_id or ''}|{number}".encode()).hexdigest()[:24]
