"""The one way a tool's function runs, for a paid call, a job and a delegated (goal) call
alike: the process pool for `cpu_bound` tools, the declared time limit, `Parked` answers,
progress reporting and the provider cost; and the one place a completed lookup's facts are
recorded and its changes queued for watches."""

from __future__ import annotations

import asyncio
import dataclasses
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from concurrent.futures import Executor
from typing import Any, cast

from tollway._core.jobs.parked import Parked
from tollway._core.plugin_api.tool import Tool, ToolContext, ToolContexts, ToolError
from tollway._core.watches.queue import record_lookup

Reporter = Callable[[str], Awaitable[Any]]


class TimeLimitExceeded(ToolError):
    """A run outlived its tool's `time_limit_s` (a failure of the call, never charged)."""

    def __init__(self, limit_s: float) -> None:
        super().__init__("internal_error", f"The call exceeded its time limit of {limit_s:g} s.", status=500)
        self.limit_s = limit_s


@dataclasses.dataclass
class Ran:
    """What one run gave: the tool's output (or `Parked`) and what it cost upstream."""

    output: Any
    provider_cost: int | None = None

    @property
    def parked(self) -> bool:
        return isinstance(self.output, Parked)


class ToolRunner:
    """Runs tools; `pool` is the process pool of `cpu_bound` tools (a worker sets it,
    runtime/worker.py), shared by every caller in this process."""

    def __init__(
        self, *, contexts: ToolContexts, watch_sources: Mapping[str, Any] | None = None, pool: Executor | None = None
    ) -> None:
        self.contexts = contexts
        # Watchable attributes: a lookup recording a change of a watched entity queues it.
        self.watch_sources = watch_sources if watch_sources is not None else {}
        self.pool = pool

    async def run(
        self,
        tool: Tool,
        value: Any,
        *,
        request_id: str,
        agent_id: str | None,
        reporter: Reporter | None = None,
        may_park: bool = False,
        pool: Executor | None = None,
        meter: Any = None,
    ) -> Ran:
        """One run of `tool` on the validated `value`, within its time limit (`TimeLimitExceeded`
        past it, a run that never suspends included). Only a job (`may_park`) may answer
        `Parked`; the tool's own failure raises. `meter` (a PreparedCall) gets the run's
        `provider_cost` whether it succeeds or fails."""
        if tool.cpu_bound:
            pool = pool or self.pool
            if pool is None:
                raise RuntimeError(f"tool {tool.name} is cpu_bound but this process has no process pool")
            ctx = None
            plain = cast("Callable[[Any], Any]", tool.run)  # a cpu_bound run is a function of the input alone
            work: Awaitable[Any] = asyncio.get_running_loop().run_in_executor(pool, plain, value)
        else:
            ctx = self.contexts.for_run(tool, request_id, agent_id)
            ctx.reporter = reporter
            work = cast("Callable[[Any, ToolContext], Awaitable[Any]]", tool.run)(value, ctx)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + tool.time_limit_s
        try:
            if type(work) is types.CoroutineType:
                # Its first step runs here, before any timer: a run that never suspends (an
                # answer from the upstream cache) cannot be interrupted, so its time is checked
                # once it has run; one that suspends goes on under the timeout, same deadline.
                try:
                    step = work.send(None)
                except StopIteration as done:
                    if loop.time() > deadline:
                        raise TimeLimitExceeded(tool.time_limit_s) from None
                    output = done.value
                else:
                    output = await _limited(_resumed(work, step), deadline, tool.time_limit_s)
            else:
                output = await _limited(work, deadline, tool.time_limit_s)
        finally:
            cost = None if ctx is None else ctx.provider_cost
            if meter is not None:
                meter.provider_cost = cost
        if isinstance(output, Parked) and not may_park:
            raise RuntimeError(f"tool {tool.name} answered Parked outside a job")
        return Ran(output, cost)

    async def record(self, tool: Tool, value: Any, output: Any, agent_id: str | None) -> None:
        """A completed lookup's facts and its watched changes, in the caller's transaction
        (the one of its receipt). Job tools record nothing here."""
        if tool.mode == "inline":
            await record_lookup(tool, value, output, agent_id, self.watch_sources)


async def _limited(work: Awaitable[Any], deadline: float, limit_s: float) -> Any:
    """`work`'s result, cancelled at the event loop's time `deadline` (TimeLimitExceeded)."""
    limit = asyncio.timeout_at(deadline)
    try:
        async with limit:
            return await work
    except TimeoutError as exc:
        if limit.expired():
            raise TimeLimitExceeded(limit_s) from exc
        raise


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], step: Any) -> Generator[Any, Any, Any]:
    """The rest of `coro`, whose first step (run by hand) yielded `step`: what `await coro`
    does from there on (each value sent or exception thrown in goes on to `coro`, closing
    it closes `coro`), as an awaitable for `_limited`."""
    while True:
        try:
            sent = yield step
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation (the time limit's too) reaches the tool
            try:
                step = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                step = coro.send(sent)
            except StopIteration as done:
                return done.value


__all__ = ["Ran", "TimeLimitExceeded", "ToolRunner"]
