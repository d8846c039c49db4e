"""The session runner every `tollway serve` and `tollway worker` process runs (a periodic
task): claims runnable sessions up to its share and runs each as a task of its own, keeping
its lease alive; `run_until_idle` drives it step by step for tests and tools. Beside it, the
periodic passes of asks (reminders, deadlines) and of ending goals (idle, settling)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from typing import Any

from tollway import PeriodicTask, Platform, PluginContext, Setting, StateKey

from . import asks, ending, sessions
from .loop import RunContext, run_session
from .settings import FAMILY, POLL_INTERVAL_S, SESSION_LEASE_S, SESSIONS_PER_WORKER

log = logging.getLogger("tollway.goals")


class SessionRunner:
    def __init__(self, platform: Platform, *, owner: str | None = None) -> None:
        self.platform = platform
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.tasks: set[asyncio.Task[Any]] = set()

    def _setting(self, setting: Setting) -> float:
        return float(self.platform.settings(FAMILY).get(setting.name) or setting.default or 0)

    async def tick(self) -> int:
        """Claim what this process may run now and start it; how many runs started."""
        room = int(self._setting(SESSIONS_PER_WORKER)) - len(self.tasks)
        if room <= 0:
            return 0
        lease_s = self._setting(SESSION_LEASE_S)
        claims = await sessions.claim(self.owner, lease_s, room)
        for claim in claims:
            task = asyncio.get_running_loop().create_task(self._run(claim, lease_s))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return len(claims)

    async def _run(self, claim: sessions.Claim, lease_s: float) -> str:
        beat = asyncio.get_running_loop().create_task(self._heartbeat(claim, lease_s))
        try:
            return await run_session(RunContext(claim=claim, platform=self.platform, lease_s=lease_s))
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _heartbeat(self, claim: sessions.Claim, lease_s: float) -> None:
        while True:
            await asyncio.sleep(max(lease_s / 3, 0.05))
            try:
                if not await sessions.still_ours(claim, lease_s):
                    return
            except Exception:  # a lost connection: the next beat tries again
                log.debug("heartbeat of %s failed", claim.session_id, exc_info=True)

    async def run_until_idle(self, *, rounds: int = 200) -> None:
        """Claim and run until nothing is runnable (every run awaited)."""
        for _ in range(rounds):
            started = await self.tick()
            if self.tasks:
                await asyncio.gather(*list(self.tasks), return_exceptions=True)
            elif not started:
                return
        raise RuntimeError("sessions still runnable after the rounds allowed")

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)


RUNNER: StateKey[SessionRunner] = StateKey(FAMILY, "session_runner")  # one per running service


def runner_for(context: PluginContext) -> SessionRunner:
    return context.state.setdefault(RUNNER, lambda: SessionRunner(context.platform))


async def _tick(context: PluginContext) -> None:
    await runner_for(context).tick()


async def _follow_up(context: PluginContext) -> None:
    await asks.follow_up(context.platform)


def asks_task() -> PeriodicTask:
    return PeriodicTask(name="goal_asks", interval_s=30.0, run=_follow_up)


async def _sweep(context: PluginContext) -> None:
    await ending.sweep(context.platform)


def ending_task() -> PeriodicTask:
    """Idle goals ended, and ended goals whose last steps died settled (ending.sweep)."""
    return PeriodicTask(name="goal_ending", interval_s=30.0, run=_sweep)


def session_task(interval_s: float | None = None) -> PeriodicTask:
    return PeriodicTask(name="goal_sessions", interval_s=interval_s or float(POLL_INTERVAL_S.default or 1), run=_tick)


async def stop_runner(context: PluginContext) -> None:
    """The service's runner, its sessions' runs cancelled and awaited (the `shutdown` hook)."""
    runner = context.state.pop(RUNNER)
    if runner is not None:
        await runner.stop()
