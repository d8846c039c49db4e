"""The inbound SMTP listener (aiosmtpd, on the service's own event loop): each message is
parsed with the standard library and handed to the kernel as a `tollway.InboundMessage`,
which the plugins' handlers thread to what it answers (a goal's question, the inbox)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import html
import logging
import re
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr
from typing import Any

from aiosmtpd.smtp import SMTP

from tollway import InboundMessage, Setting, now_ms

log = logging.getLogger("tollway.email")
KIND = "email"
INBOUND_PORT = Setting(
    KIND, "inbound_port", None, "Receive inbound email by SMTP on this port (tollway serve --smtp-port sets it)."
)
INBOUND_HOST = Setting(
    KIND,
    "inbound_host",
    "127.0.0.1",
    "The address the inbound SMTP listener binds (0.0.0.0 to take mail from other hosts).",
)
MAX_MESSAGE_BYTES = 10 * 1024 * 1024
MAX_TEXT = 20_000
_IDS = re.compile(r"<[^<>\s]{1,250}>")
_TAGS = re.compile(r"<[^>]*>")


def parse(raw: bytes) -> InboundMessage:
    """The parts of a message the service uses: who, to whom, subject, plain text, threading."""
    msg: EmailMessage = email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[assignment]
    body = msg.get_body(("plain", "html"))
    text = ""
    if body is not None:
        content = body.get_content()
        text = content if body.get_content_subtype() == "plain" else html.unescape(_TAGS.sub(" ", content))
    recipients = tuple(
        addr.lower() for _name, addr in getaddresses(msg.get_all("To", []) + msg.get_all("Cc", [])) if addr
    )
    return InboundMessage(
        channel="email",
        sender=parseaddr(str(msg.get("From", "")))[1].lower(),
        recipients=recipients,
        subject=str(msg.get("Subject", ""))[:500],
        text=text.strip()[:MAX_TEXT],
        message_id=_first_id(msg.get("Message-ID")),
        in_reply_to=_first_id(msg.get("In-Reply-To")),
        references=tuple(_IDS.findall(str(msg.get("References", ""))))[-50:],
        received_ms=now_ms(),
        raw=raw,
    )


def _first_id(header: Any) -> str | None:
    found = _IDS.findall(str(header or ""))
    return found[0] if found else None


class Handler:
    def __init__(self, platform: Any) -> None:
        self.platform = platform

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        try:
            message = parse(envelope.original_content or envelope.content)
        except Exception:  # a message the parser cannot read is refused, the listener goes on
            log.warning("inbound message from %s could not be parsed", getattr(envelope, "mail_from", "?"))
            return "554 Message could not be parsed"
        if not message.recipients:
            message = InboundMessage(**{**message.__dict__, "recipients": tuple(r.lower() for r in envelope.rcpt_tos)})
        taken = await self.platform.deliver_inbound(message)
        log.info(
            "inbound email %s from %s %s",
            message.message_id,
            message.sender,
            "delivered" if taken else "kept by nobody",
        )
        return "250 Message accepted for delivery"


async def listen(platform: Any, host: str, port: int) -> asyncio.AbstractServer:
    """Serve SMTP on `host`:`port` in the running loop (the one the database uses)."""
    loop = asyncio.get_running_loop()
    handler = Handler(platform)
    return await loop.create_server(
        lambda: SMTP(handler, data_size_limit=MAX_MESSAGE_BYTES, hostname="tollway"), host=host, port=port
    )
