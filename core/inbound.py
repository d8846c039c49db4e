"""Inbound messages (a reply by email, later a text or a call result): the protocol-neutral
`InboundMessage` a listener or a provider's webhook hands the kernel, and `Inbound`, which
offers it to every handler plugins registered (`register_inbound_handlers`) until one takes it."""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

log = logging.getLogger("tollway.inbound")


@dataclasses.dataclass(frozen=True)
class InboundMessage:
    channel: str  # "email"
    sender: str  # the address it came from
    recipients: tuple[str, ...]
    subject: str
    text: str  # the plain-text body
    message_id: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()  # the thread, oldest first
    received_ms: int = 0

    @property
    def thread(self) -> tuple[str, ...]:
        """The message ids it follows, the one it answers first."""
        ids = ([self.in_reply_to] if self.in_reply_to else []) + list(reversed(self.references))
        return tuple(dict.fromkeys(i for i in ids if i))


InboundHandler = Callable[[InboundMessage, Any], Awaitable[bool]]


class Inbound:
    """Offers each message to the handlers in registration order; the first that returns
    True has taken it. A handler that fails is logged and the next one is asked."""

    def __init__(self, handlers: Sequence[InboundHandler]) -> None:
        self.handlers = handlers
        self.platform: Any = None  # set when the kernel starts

    async def deliver(self, message: InboundMessage) -> bool:
        for handler in self.handlers:
            try:
                if await handler(message, self.platform):
                    return True
            except Exception:
                log.exception("inbound handler %s failed on a %s message", getattr(handler, "__name__", handler), message.channel)
        return False
