"""A background loop that runs one piece of kernel work whenever its event fires and,
so a lost event only delays, every `poll_s` anyway: watch deliveries and webhook
sending run this way in the worker processes."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("tollway.loops")


class WakeLoop:
    def __init__(self, name: str, events: Any, channel: str, work: Callable[[], Awaitable[int]], *, poll_s: float = 1.0) -> None:
        self.name = name
        self.events = events
        self.channel = channel
        self.work = work
        self.poll_s = poll_s
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def _run(self) -> None:
        unsubscribe = self.events.subscribe(self.channel, lambda _payload: self._wake.set())
        try:
            while True:
                self._wake.clear()
                try:
                    done = await self.work()
                except Exception:
                    log.exception("%s failed; retrying", self.name)
                    done = 0
                if done:
                    continue  # more may be waiting
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_s)
        finally:
            unsubscribe()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
