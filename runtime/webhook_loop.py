"""The webhook loop: sends due webhooks from the outbox wherever job workers run.

It wakes when webhooks are announced due (`WEBHOOKS_DUE`, published after the
enqueueing transaction commits) and also polls every `poll_s`, which is what
brings retries back when their delay has passed and covers a lost wake-up.
Any number of loops may run against one database (core/webhooks/outbox.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger("tollway.webhooks")


class WebhookLoop:
    """Runs `sender.run_due` until stopped; `stop` lets the batch in flight finish
    (each attempt is bounded by the sender's timeout) before it returns."""

    def __init__(self, sender: Any, *, poll_s: float = 1.0, batch: int = 20, stop_grace_s: float = 15.0) -> None:
        self.sender = sender
        self.poll_s = poll_s
        self.batch = batch
        self.stop_grace_s = stop_grace_s
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0  # webhooks attempted by this loop

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), self.stop_grace_s)
        except asyncio.TimeoutError:  # rows still leased are sent again once the lease expires
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        unsubscribe = self.sender.on_due(lambda _payload: self._wake.set())
        try:
            while not self._stop.is_set():
                self._wake.clear()
                try:
                    claimed = await self.sender.run_due(self.batch)
                except Exception:
                    log.exception("sending due webhooks failed")
                    claimed = 0
                self.sent += claimed
                if claimed >= self.batch:
                    continue  # more may be due at once
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_s)
        finally:
            unsubscribe()
