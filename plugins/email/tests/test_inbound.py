"""Inbound email, both ways in (both databases): the SMTP listener a service runs when its
inbound port is set, and the operator route a mail provider's forwarder posts raw messages
to. Each parsed message (sender, recipients, subject, plain text, or HTML made text,
threading ids) is offered to the plugins' inbound handlers."""

from __future__ import annotations

import asyncio
from email.message import EmailMessage

import aiosmtplib

import tollway
from tollway.testing import http_client, reserve_socket

OPERATOR = {"Authorization": "Bearer test-operator-token"}


class Catcher:
    def __init__(self) -> None:
        self.got: list[tollway.InboundMessage] = []

    @tollway.hookimpl
    def register_inbound_handlers(self, register):
        async def take(message, platform):
            self.got.append(message)
            return message.subject != "ignored"

        register(take)


def message(subject: str, *, html: bool = False) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Lee Park <Lee@Example.com>"
    msg["To"] = "agents+a0123@tollway.test"
    msg["Cc"] = "ops@tollway.test"
    msg["Subject"] = subject
    msg["Message-ID"] = "<m2@example.com>"
    msg["In-Reply-To"] = "<m1@tollway.test>"
    msg["References"] = "<m0@tollway.test> <m1@tollway.test>"
    if html:
        msg.set_content("<p>Ship it to <b>12 Elm</b> &amp; call.</p>", subtype="html")
    else:
        msg.set_content("Ship it to 12 Elm.")
    return msg


async def test_the_smtp_listener_hands_messages_to_the_handlers(kernel_factory) -> None:
    probe = reserve_socket()
    port = probe.getsockname()[1]
    probe.close()
    catcher = Catcher()
    await kernel_factory(
        plugins=[("catcher", catcher)], installed={"tollway_email"}, env={"TOLLWAY_EMAIL_INBOUND_PORT": str(port)}
    )
    for _ in range(200):
        try:
            await aiosmtplib.send(message("plain"), hostname="127.0.0.1", port=port)
            break
        except (OSError, aiosmtplib.SMTPConnectError):
            await asyncio.sleep(0.01)
    await aiosmtplib.send(message("html", html=True), hostname="127.0.0.1", port=port)
    plain, rich = catcher.got
    assert plain.sender == "lee@example.com" and plain.recipients == ("agents+a0123@tollway.test", "ops@tollway.test")
    assert plain.text == "Ship it to 12 Elm." and plain.subject == "plain" and plain.channel == "email"
    assert plain.message_id == "<m2@example.com>" and plain.thread == ("<m1@tollway.test>", "<m0@tollway.test>")
    assert " ".join(rich.text.split()) == "Ship it to 12 Elm & call."


async def test_the_provider_route_takes_raw_messages_with_the_operator_token(kernel_factory) -> None:
    catcher = Catcher()
    kernel = await kernel_factory(plugins=[("catcher", catcher)], installed={"tollway_email"})
    path = "/v1/tools/internal/inbound/email"
    raw = message("plain").as_bytes()
    async with http_client(kernel) as client:
        taken = await client.post(path, content=raw, headers={**OPERATOR, "content-type": "message/rfc822"})
        ignored = await client.post(
            path, content=message("ignored").as_bytes(), headers={**OPERATOR, "content-type": "message/rfc822"}
        )
        anonymous = await client.post(path, content=raw, headers={"content-type": "message/rfc822"})
        empty = await client.post(path, content=b"  ", headers=OPERATOR)
        fromless = await client.post(path, content=b"Subject: x\r\n\r\nbody", headers=OPERATOR)
    assert taken.status_code == 200 and taken.json()["data"] == {"message_id": "<m2@example.com>", "delivered": True}
    assert ignored.json()["data"]["delivered"] is False
    assert anonymous.status_code == 401 and empty.status_code == 400 and fromless.status_code == 400
    assert [m.subject for m in catcher.got] == ["plain", "ignored"]
