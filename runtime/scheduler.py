"""Runs the periodic tasks plugins and the kernel declare (`register_periodic_tasks`),
each every `interval_s`, in the serving or worker process: at once when the
scheduler starts, or after one interval for a task declared `run_at_start=False`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tollway._core.plugin_api.periodic import PeriodicTask

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

log = logging.getLogger("tollway.scheduler")


class Scheduler:
    """Awaits each task's `run(services)` every `interval_s` until stopped."""

    def __init__(self, tasks: Sequence[PeriodicTask], services: Any) -> None:
        self.periodic_tasks = list(tasks)
        self.services = services
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    def for_kernel(cls, kernel: Kernel) -> Scheduler:
        """The started kernel's declared tasks, each handed the kernel's `PluginContext`."""
        return cls(kernel.periodic_tasks, kernel.context)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for task in self.periodic_tasks:
            self._tasks.append(loop.create_task(self._every(task)))

    async def _every(self, task: Any) -> None:
        if not getattr(task, "run_at_start", True):
            await asyncio.sleep(task.interval_s)
        while True:
            try:
                await task.run(self.services)
            except Exception:
                log.exception("periodic task %s failed", task.name)
            await asyncio.sleep(task.interval_s)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        self._tasks.clear()
