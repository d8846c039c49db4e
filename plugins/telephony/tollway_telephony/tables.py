"""The telephony plugin's tables: each SMS batch the tool sent (one row per call) and its
messages with Twilio's SIDs and statuses, each voice call with its status, length and
evaluation, the inbound SMS kept for the agent they answer (or for nobody), and each agent's
own number (`PhoneNumber`); and the status update that never moves a row back
(`unless_moved`)."""

from __future__ import annotations

from typing import Any

from piccolo.columns import BigInt, Column, Integer, Text, Varchar
from piccolo.query.functions import Case, When
from piccolo.querystring import QueryString
from piccolo.table import Table


class SmsBatch(Table, tablename="telephony_sms_batches"):
    request_id = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=64)
    recipients = Integer()
    state = Varchar(length=16)  # sending, sent (the job's run finished), failed (none went out)
    notified_ms = BigInt(null=True, default=None)  # when sms_completed was written (once)
    created_ms = BigInt()
    updated_ms = BigInt()


class SmsMessage(Table, tablename="telephony_sms_messages"):
    id = Varchar(length=40, primary_key=True)
    request_id = Varchar(length=64)
    position = Integer()
    agent_id = Varchar(length=64)
    sender = Varchar(length=20)  # the service's number it went from
    recipient = Varchar(length=20)
    thread_id = Varchar(length=40)
    sid = Varchar(length=64, null=True, default=None)
    status = Varchar(length=24)  # pending (not sent yet), then Twilio's status
    error_code = Varchar(length=40, null=True, default=None)  # Twilio's error code, or ours when it was never sent
    error_message = Text(null=True, default=None)
    sent_ms = BigInt(null=True, default=None)  # when Twilio took it
    created_ms = BigInt()
    updated_ms = BigInt()


class InboundSms(Table, tablename="telephony_sms_inbox"):
    id = Varchar(length=40, primary_key=True)
    message_sid = Varchar(length=64)
    agent_id = Varchar(length=64, null=True, default=None)  # None: kept unassigned
    sender = Varchar(length=40)
    recipient = Varchar(length=40)
    body = Text()
    num_media = Integer()
    media_urls = Text()  # JSON list
    thread_id = Varchar(length=40)
    related_outbound_id = Varchar(length=40, null=True, default=None)
    received_ms = BigInt()
    created_ms = BigInt()


class VoiceCall(Table, tablename="telephony_voice_calls"):
    request_id = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=64)
    sender = Varchar(length=20)
    recipient = Varchar(length=20)
    goal = Text(null=True, default=None)
    words = Integer()  # of the message: how long it takes to say
    sid = Varchar(length=64, null=True, default=None)
    status = Varchar(length=24)
    duration_s = Integer(null=True, default=None)
    answered_by = Varchar(length=40, null=True, default=None)
    evaluation = Text(null=True, default=None)  # JSON {success, reason}
    state = Varchar(length=16)  # calling, placed, failed
    notified_ms = BigInt(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


class PhoneNumber(Table, tablename="telephony_numbers"):
    """An agent's own number at a Twilio account (numbers.py): one held at a time per agent
    and account (`holder` is unique; None once released), kept after release for the cap's count."""

    id = Varchar(length=40, primary_key=True)
    holder = Varchar(length=140, null=True, default=None)  # "<agent>|<account SID>" until released
    agent_id = Varchar(length=64)
    account_sid = Varchar(length=64)
    country = Varchar(length=2)
    phone_number = Varchar(length=20, null=True, default=None)  # E.164, once bought
    sid = Varchar(length=64, null=True, default=None)  # Twilio's PN…, once bought
    state = Varchar(length=16)  # provisioning, active, releasing, released
    monthly_cost = BigInt()  # micro-USDC a month, as configured when it was bought
    billed_months = Integer()  # months of its cost put on send receipts so far
    last_used_ms = BigInt()  # the last send, call or inbound text
    warned_ms = BigInt(null=True, default=None)  # phone_expiring sent for the current idle stretch
    provisioned_ms = BigInt(null=True, default=None)
    released_ms = BigInt(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


TABLES = [SmsBatch, SmsMessage, InboundSms, VoiceCall, PhoneNumber]


def unless_moved(status: Column, new: Any) -> QueryString:
    """A status column's new value: `new` while the row is still `pending`, else the status a
    status callback already moved it to (Twilio's callback may come before the send returns)."""
    return Case(When(status == "pending", then=QueryString("{}", new)), default=status)
