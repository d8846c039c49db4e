"""Inbound messages (a reply by email, a text, a call's outcome): the protocol-neutral
`InboundMessage` a listener or a provider's webhook hands the kernel, and `Inbound`, which
offers it to every handler plugins registered (`register_inbound_handlers`): an inbox keeps
it, a goal whose question it answers takes it, each on its own."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

log = logging.getLogger("tollway.inbound")


@dataclasses.dataclass(frozen=True)
class InboundMessage:
    channel: str  # "email", "sms", "voice" (a call's outcome)
    sender: str  # the address it came from
    recipients: tuple[str, ...]
    subject: str
    text: str  # the plain-text body
    message_id: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()  # the thread, oldest first
    received_ms: int = 0
    raw: bytes = dataclasses.field(
        default=b"", repr=False
    )  # the message as received (its whole MIME text, for an email)

    @property
    def thread(self) -> tuple[str, ...]:
        """The message ids it follows, the one it answers first."""
        ids = ([self.in_reply_to] if self.in_reply_to else []) + list(reversed(self.references))
        return tuple(dict.fromkeys(i for i in ids if i))


InboundHandler = Callable[[InboundMessage, Any], Awaitable[bool]]


class Inbound:
    """Offers each message to every handler, in registration order; True when one of them
    took it. A handler that fails is logged and the others are still asked."""

    def __init__(self, handlers: Sequence[InboundHandler]) -> None:
        self.handlers = handlers
        self.platform: Any = None  # set when the kernel starts

    async def deliver(self, message: InboundMessage) -> bool:
        taken = False
        for handler in self.handlers:
            try:
                taken = bool(await handler(message, self.platform)) or taken
            except Exception:
                log.exception(
                    "inbound handler %s failed on a %s message", getattr(handler, "__name__", handler), message.channel
                )
        return taken
