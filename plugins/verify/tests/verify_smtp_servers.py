"""Real SMTP servers (aiosmtpd) on 127.0.0.1 for the probe's tests.

`Mailboxes` answers RCPT TO as a mail server would: 250 for the mailboxes it holds
(every address when it is a catch-all), 450 for the ones it greylists, 550 for the
rest. It notes every greeting name, sender and recipient it was given, and counts DATA
commands (a probe must never send one). `CountingController` counts the connections
made to it (aiosmtpd builds one SMTP session per connection through `factory`), after
its own start-up check.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from aiosmtpd.controller import Controller

from tollway.testing import reserve_socket


class Mailboxes:
    def __init__(
        self, accepted: tuple[str, ...] = (), greylisted: tuple[str, ...] = (), *, catch_all: bool = False
    ) -> None:
        self.accepted = {a.lower() for a in accepted}
        self.greylisted = {a.lower() for a in greylisted}
        self.catch_all = catch_all
        self.greetings: list[str] = []
        self.senders: list[str] = []
        self.recipients: list[str] = []
        self.data_commands = 0

    async def handle_EHLO(
        self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        self.greetings.append(hostname)
        session.host_name = hostname
        return responses

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, mail_options: list[str]) -> str:
        self.senders.append(address)
        envelope.mail_from = address
        return "250 2.1.0 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]) -> str:
        self.recipients.append(address)
        if self.catch_all or address.lower() in self.accepted:
            envelope.rcpt_tos.append(address)
            return "250 2.1.5 Recipient OK"
        if address.lower() in self.greylisted:
            return "450 4.2.0 Greylisted, please try again later"
        return "550 5.1.1 No such user here"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.data_commands += 1
        return "554 5.7.1 A probe must not send a message"


class CountingController(Controller):
    def __init__(self, handler: Any, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._lock = threading.Lock()
        self.connections = 0

    def factory(self):
        with self._lock:
            self.connections += 1
        return super().factory()


@contextlib.contextmanager
def smtp_mailboxes(mailboxes: Mailboxes, **smtp: Any) -> Iterator[tuple[CountingController, int]]:
    """Serve `mailboxes` on a free port of 127.0.0.1 (`smtp`: aiosmtpd's SMTP options, such
    as `enable_SMTPUTF8=False`): yields the controller (its `connections`, zero after
    start-up) and the port."""
    probe = reserve_socket()  # a free port (aiosmtpd's start-up check cannot use port 0)
    port = probe.getsockname()[1]
    probe.close()
    controller = CountingController(mailboxes, hostname="127.0.0.1", port=port, **smtp)
    controller.start()
    controller.connections = 0  # the start-up check's own connection
    try:
        yield controller, port
    finally:
        controller.stop()


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on."""
    sock = reserve_socket()
    port = sock.getsockname()[1]
    sock.close()
    return port
