"""Job-mode tools for the kernel's job tests (no upstream needed).

`add_numbers` adds; `gate_job` waits until its gate file exists (to hold a job
while a worker is killed; `gate_inline` is the same as an inline call taking its credits
before the run, to hold a paid request while its API process is killed, and
`gate_inline_one_commit` one charged in the commit after its run); `broken_job` fails with a job failure code; `slow_job`
outlives its time limit; `cpu_sum` runs in the worker's process pool; `retry_job` parks
with `retry_after_s` (as a run that must ask an upstream again later) until its gate file
exists, counting its runs in its marker file, then adds.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import msgspec

from tollway import Example, Parked, Tool, ToolContext, ToolError, hookimpl


class Numbers(msgspec.Struct, forbid_unknown_fields=True):
    a: int
    b: int = 0
    gate: str | None = None  # a file path gate_job waits for
    marker: str | None = None  # a file gate_job appends its worker pid to when it starts
    report: str | None = None  # a progress message gate_job reports before it waits


class Sum(msgspec.Struct):
    sum: int
    pid: int


async def add_numbers(value: Numbers, ctx: ToolContext) -> Sum:
    ctx.provider_cost = 5  # what an upstream would have cost us: kept beside the job's receipt
    return Sum(sum=value.a + value.b, pid=os.getpid())


async def gate_job(value: Numbers, ctx: ToolContext) -> Sum:
    if value.report:
        await ctx.report(value.report)
    if value.marker:
        with open(value.marker, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    while value.gate and not Path(value.gate).exists():
        await asyncio.sleep(0.05)
    return Sum(sum=value.a + value.b, pid=os.getpid())


async def broken_job(value: Numbers, ctx: ToolContext) -> Sum:
    ctx.provider_cost = 4  # spent before it failed: kept, refunded or not
    raise ToolError("provider_unavailable", "the upstream is down", status=503)


async def slow_job(value: Numbers, ctx: ToolContext) -> Sum:
    await asyncio.sleep(30)
    return Sum(sum=0, pid=os.getpid())


async def retry_job(value: Numbers, ctx: ToolContext) -> Sum | Parked:
    if value.marker:
        with open(value.marker, "a") as fh:
            fh.write(f"{ctx.request_id}\n")
    if value.gate and not Path(value.gate).exists():
        return Parked("asking again shortly", retry_after_s=0.1)
    return Sum(sum=value.a + value.b, pid=os.getpid())


def cpu_sum(value: Numbers) -> Sum:
    """Runs in a worker's process pool: a plain function of the input."""
    return Sum(sum=sum(i * i for i in range(value.a)) + value.b, pid=os.getpid())


def _tool(name: str, run, mode: str = "job", **kw) -> Tool:
    return Tool(
        name=name,
        path=f"/v1/tools/test/{name.replace('_', '-')}",
        title=name,
        description=f"{name} (job tests)",
        category="infrastructure",
        input_type=Numbers,
        output_type=Sum,
        run=run,
        price="0.002",
        family="jobs",
        mode=mode,
        rate_limit="paid",
        examples=(Example("two and two", {"a": 2, "b": 2}),),
        **kw,
    )


ADD = _tool("add_numbers", add_numbers)
ADD_KEYED = _tool("add_keyed", gate_job, idempotency="required")  # like solve and predict
GATE = _tool("gate_job", gate_job)
GATE_INLINE = _tool("gate_inline", gate_job, mode="inline", credit_hold=True)  # credits held while it runs
GATE_INLINE_ONE_COMMIT = _tool("gate_inline_one_commit", gate_job, mode="inline", credit_hold=False)
BROKEN = _tool("broken_job", broken_job)
BROKEN_KEPT = _tool("broken_kept", broken_job, refund_failed_jobs=False)
SLOW = _tool("slow_job", slow_job, time_limit_s=0.3)
CPU = _tool("cpu_sum", cpu_sum, cpu_bound=True)
RETRY = _tool("retry_job", retry_job)


class JobsPlugin:
    @hookimpl
    def register_tools(self, register):
        for tool in (ADD, ADD_KEYED, GATE, BROKEN, BROKEN_KEPT, SLOW, CPU, RETRY):
            register(tool)


class CrashPlugin:
    """The inline gate, for the tests that kill an API process mid-call."""

    @hookimpl
    def register_tools(self, register):
        register(GATE_INLINE)
        register(GATE_INLINE_ONE_COMMIT)
