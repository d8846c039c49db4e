"""The job worker: claims jobs from the shared database and runs them.

Any number of workers (in `tollway serve` or as `tollway worker` processes on
any machines) share one PostgreSQL: claims use `FOR UPDATE SKIP LOCKED`, a lease
kept alive by heartbeats, and fencing by attempt number (core/jobs/jobs.py). Workers
wake on the `tollway_jobs_new` event and also poll, so a lost event only delays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from tollway._core.basics.events import JOBS_NEW
from tollway._core.jobs import jobs
from tollway._runtime.pool import cpu_pool

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

log = logging.getLogger("tollway.worker")


class Worker:
    def __init__(
        self,
        kernel: Kernel,
        *,
        concurrency: int = 8,
        lease_s: float = 30.0,
        poll_s: float = 1.0,
        worker_id: str | None = None,
        pool: Executor | None = None,
    ) -> None:
        self.kernel = kernel
        self.concurrency = concurrency
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._pool = pool
        self._own_pool = False
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._running: set[asyncio.Task[Any]] = set()
        self._slots = asyncio.Semaphore(concurrency)
        self._task: asyncio.Task[None] | None = None
        self.completed = 0

    @property
    def skip_locked(self) -> bool:
        return self.kernel.db.kind == "postgres"

    async def _pool_for_cpu_tools(self) -> Executor | None:
        if self._pool is None and any(t.cpu_bound for t in self.kernel.tools.values()):
            self._pool = cpu_pool(self.kernel.tools.values())  # children die with us, never hold our sockets
            self._own_pool = True
            # A pool process is started at a first submit, which waits until the fork
            # server has imported the tools' modules: that wait happens here, in a
            # thread, not in the first job's submit on the event loop (the HTTP front
            # shares the loop and would stop answering meanwhile).
            try:
                await asyncio.to_thread(lambda: self._pool.submit(os.getpid).result())  # type: ignore[union-attr]
            except Exception:  # the jobs that need the pool fail and say so
                log.exception("the process pool of cpu-bound tools did not start")
        runner = getattr(self.kernel, "tool_runner", None)
        if runner is not None and runner.pool is None:  # goal steps in this process use it too
            runner.pool = self._pool
        return self._pool

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._own_pool and self._pool is not None:
            runner = getattr(self.kernel, "tool_runner", None)
            if runner is not None and runner.pool is self._pool:
                runner.pool = None
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def run(self) -> None:
        pool = await self._pool_for_cpu_tools()  # jobs that came meanwhile are claimed next
        unsubscribe = self.kernel.events.subscribe(JOBS_NEW, lambda _payload: self._wake.set())
        try:
            while not self._stop.is_set():
                # Cleared before claiming: an event that arrives while we claim sets it again
                # and we claim once more; without one we wait (no empty claim to find out).
                self._wake.clear()
                await self._fill_slots(pool)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_s)
        finally:
            unsubscribe()
            for task in list(self._running):
                task.cancel()
            for task in list(self._running):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _fill_slots(self, pool: Executor | None) -> bool:
        """Claim jobs while there are free slots and runnable jobs; True if any. Each claim
        asks for as many jobs as there are free slots (waiting for one when none is free):
        a claim that brings back fewer found the queue empty, so there is no claim after it
        to find that out."""
        claimed_any = False
        while not self._stop.is_set():
            await self._slots.acquire()
            free = 1
            while not self._slots.locked():  # the other free slots, taken without waiting
                await self._slots.acquire()
                free += 1
            try:
                claimed = await jobs.claim_many(
                    self.worker_id, self.lease_s, free, skip_locked=self.skip_locked, bus=self.kernel.events
                )
            except Exception:
                for _ in range(free):
                    self._slots.release()
                log.exception("claiming a job failed")
                await asyncio.sleep(self.poll_s)
                return claimed_any
            for _ in range(free - len(claimed)):
                self._slots.release()
            for one in claimed:
                task = asyncio.get_running_loop().create_task(self._run_one(one, pool))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
            claimed_any = claimed_any or bool(claimed)
            if len(claimed) < free:
                return claimed_any
        return claimed_any

    async def _run_one(self, claimed: jobs.Claimed, pool: Executor | None) -> None:
        try:
            await self.kernel.job_runner.announce_claim(claimed)
            status = await self.kernel.job_runner.run_claimed(claimed, lease_s=self.lease_s, pool=pool)
            if status in ("completed", "failed"):
                self.completed += 1
        except Exception:
            log.exception("job %s crashed the runner", claimed.id)
        finally:
            # A freed slot needs no wake-up: a claim loop short of slots waits on the
            # semaphore itself, and one that found the queue empty waits for the next event.
            self._slots.release()
