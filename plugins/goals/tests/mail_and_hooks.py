"""A local peer of the goals story: the webhook receiver of `tollway.testing` (headers and
raw body of every POST); the SMTP server is `tollway.testing.smtp_server`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tollway.testing import HookReceiver, webhook_receiver


@contextmanager
def hook_receiver() -> Iterator[HookReceiver]:
    with webhook_receiver("/hooks/results") as receiver:
        yield receiver
