"""The email plugin's tables: the inbox (each message addressed to an agent), its
attachments and their contents stored once by SHA-256; what the email tool sent, with its
opens and clicks; the key that signs tracking links."""

from __future__ import annotations

from piccolo.columns import BigInt, Bytea, Integer, Text, Varchar
from piccolo.table import Table


class InboxEmail(Table, tablename="email_inbox"):
    id = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=64)
    sender = Text()
    recipients = Text()  # JSON list
    subject = Text()
    message_id = Text(null=True, default=None)
    thread_id = Text()
    body = Text()
    body_html = Text(null=True, default=None)
    received_ms = BigInt()


class InboxAttachment(Table, tablename="email_attachments"):
    id = Varchar(length=64, primary_key=True)
    email_id = Varchar(length=64, index=True)
    position = Integer()
    filename = Text()
    content_type = Text()
    size = BigInt()
    sha256 = Varchar(length=64)


class Blob(Table, tablename="email_blobs"):
    sha256 = Varchar(length=64, primary_key=True)
    content = Bytea()
    size = BigInt()


class SentEmail(Table, tablename="email_sent"):
    request_id = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=64)
    sender = Text()
    recipient = Text()
    subject = Text()
    status = Varchar(length=16)  # queued, sent, failed
    opens = Integer()
    clicks = Integer()
    links = Text()  # JSON list of the original URLs, in order
    message_id = Text(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


class EmailKey(Table, tablename="email_keys"):
    name = Varchar(length=64, primary_key=True)
    value = Text()


TABLES = [InboxEmail, InboxAttachment, Blob, SentEmail, EmailKey]
