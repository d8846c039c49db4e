"""Background loops of the worker processes: each runs one piece of kernel work when
its wake-up event fires and, so a lost event only delays and retries come back when
their delay has passed, every `poll_s` anyway. Watch deliveries and webhook sending
run this way wherever job workers run; any number of loops may share one database."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("tollway.loops")

Subscribe = Callable[[Callable[[str], None]], Callable[[], None]]  # callback -> unsubscribe


class WakeLoop:
    """Runs `work()` until stopped; `work` returns True when more may be waiting (it runs
    again at once). `stop` lets the pass in flight finish, up to `stop_grace_s`."""

    def __init__(
        self,
        name: str,
        *,
        subscribe: Subscribe,
        work: Callable[[], Awaitable[bool]],
        poll_s: float = 1.0,
        stop_grace_s: float = 15.0,
    ) -> None:
        self.name = name
        self.subscribe = subscribe
        self.work = work
        self.poll_s = poll_s
        self.stop_grace_s = stop_grace_s
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.get_running_loop().create_task(self.run(), name=self.name)
        return self._task

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), self.stop_grace_s)
        except TimeoutError:  # work cut short is picked up again (leases, pending rows)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        unsubscribe = self.subscribe(lambda _payload: self._wake.set())
        try:
            while not self._stop.is_set():
                self._wake.clear()
                try:
                    more = await self.work()
                except Exception:
                    log.exception("%s failed; trying again", self.name)
                    more = False
                if more:
                    continue
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_s)
        finally:
            unsubscribe()


def webhook_loop(sender, *, batch: int = 20, poll_s: float = 1.0) -> WakeLoop:
    """Sends due webhooks from the outbox (core/webhooks/outbox.py)."""

    async def work() -> bool:
        return await sender.run_due(batch) >= batch

    return WakeLoop("webhooks", subscribe=sender.on_due, work=work, poll_s=poll_s)


def delivery_loop(kernel, *, poll_s: float = 1.0) -> WakeLoop:
    """Delivers pending watch changes (core/watches/delivery.py)."""
    from tollway._core.basics.events import WATCH_DELIVERIES

    async def work() -> bool:
        return await kernel.watch_deliveries.run_pending() > 0

    return WakeLoop(
        "watch_deliveries", subscribe=lambda cb: kernel.events.subscribe(WATCH_DELIVERIES, cb), work=work, poll_s=poll_s
    )
