"""One tool runner for paid calls, jobs and delegated (goal) calls: a `cpu_bound` tool runs
in the worker's process pool whoever calls it, and a tool's time limit ends its run the
same way on every path (failed, not charged), a run that never suspends included; a run
that suspends goes on with what it awaits (values and exceptions), and a cancellation (the
limit's, or its caller's) reaches the tool itself."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable

import pytest

from tests.kernel.test_jobs import wait_for_status
from tests.support.jobs_plugin import SLOW, JobsPlugin, Numbers, Sum
from tollway import ToolContext, hookimpl
from tollway._core.calls.tool_runner import TimeLimitExceeded
from tollway._core.jobs import jobs
from tollway._runtime.worker import Worker
from tollway.testing import credits_session, http_client

SLOW_INLINE = dataclasses.replace(SLOW, name="slow_inline", path="/v1/tools/test/slow-inline", mode="inline")


class SlowInlinePlugin:
    @hookimpl
    def register_tools(self, register):
        register(SLOW_INLINE)
        register(SYNC_SLOW)


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("jobs", JobsPlugin()), ("slow_inline", SlowInlinePlugin())])


async def _pool_handed_over(kernel) -> None:
    for _ in range(600):
        if kernel.tool_runner.pool is not None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the worker never gave the runner its pool")


async def test_a_cpu_bound_tool_called_for_a_goal_runs_in_the_workers_pool_as_a_job_does(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job = (await client.post("/v1/tools/test/cpu-sum", json={"a": 1000, "b": 1}, headers=auth)).json()
        worker = Worker(kernel, poll_s=0.05)
        worker.start()
        try:
            await _pool_handed_over(kernel)
            call = await kernel.delegated.prepare("cpu_sum", {"a": 1000, "b": 1})
            delegated = await kernel.delegated.run(
                call, agent_id="agt_goal", request_id=kernel.delegated.new_request_id()
            )
            done = await wait_for_status(client, job["request_id"], auth)
        finally:
            await worker.stop()
    expected = sum(i * i for i in range(1000)) + 1
    assert done["result"]["sum"] == delegated.sum == expected
    assert (
        done["result"]["pid"] != os.getpid() and delegated.pid != os.getpid()
    )  # neither ran on the event loop's process
    assert kernel.tool_runner.pool is None  # the worker took its pool back when it stopped


async def test_without_a_pool_a_cpu_bound_call_is_refused_rather_than_run_on_a_thread(kernel):
    assert kernel.tool_runner.pool is None  # no worker in this process
    call = await kernel.delegated.prepare("cpu_sum", {"a": 3})
    with pytest.raises(RuntimeError, match="process pool"):
        await kernel.delegated.run(call, agent_id="agt_goal", request_id=kernel.delegated.new_request_id())


async def test_the_time_limit_ends_a_run_the_same_way_on_every_path(kernel):
    async with http_client(kernel) as client:
        agent_id, auth = await credits_session(client, "1")
        before = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        inline = await client.post("/v1/tools/test/slow-inline", json={"a": 1}, headers=auth)
        never_suspends = await client.post("/v1/tools/test/sync-slow", json={"a": 1}, headers=auth)
        after = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        job = (await client.post("/v1/tools/test/slow-job", json={"a": 1}, headers=auth)).json()
        # the job's attempt, run as the worker runs a claimed job
        claimed = await jobs.claim("test-worker", 30.0, skip_locked=False, bus=kernel.events)
        assert claimed is not None and claimed.id == job["request_id"]
        assert await kernel.job_runner.run_claimed(claimed, lease_s=30.0) == "failed"
        failed_job = (await client.get(f"/v1/requests/{job['request_id']}", headers=auth)).json()
    call = await kernel.delegated.prepare("slow_job", {"a": 1})
    with pytest.raises(TimeLimitExceeded) as delegated:
        await asyncio.wait_for(
            kernel.delegated.run(call, agent_id=agent_id, request_id=kernel.delegated.new_request_id()), 10
        )
    # paid inline calls, one that awaits and one that never suspends: failed with the limit,
    # refunded (not charged)
    for answer in (inline, never_suspends):
        assert answer.status_code == 500, answer.text
        assert answer.json()["error"] == "internal_error" and "time limit of 0.3 s" in answer.json()["message"]
    assert before == after
    # job: failed with the limit, refunded
    assert failed_job["status"] == "failed" and failed_job["error_code"] == "internal_error"
    assert "time limit of 0.3 s" in failed_job["error"]
    # goal step (delegated call): the same failure, raised to the loop
    assert delegated.value.code == "internal_error" and delegated.value.limit_s == 0.3


# -- the time limit of a run that never suspends, and of one that does --------------------
def _sleeps_without_awaiting(value: Numbers, ctx: ToolContext) -> Awaitable[Sum]:
    async def run() -> Sum:
        time.sleep(0.35)  # past the 0.3 s limit, never giving the event loop a turn
        return Sum(sum=value.a, pid=os.getpid())

    return run()


async def _awaits_then_answers(value: Numbers, ctx: ToolContext) -> Sum:
    await asyncio.sleep(0)  # a bare yield to the event loop
    got = await STEPS.pop(0)  # a value sent in by the event loop
    try:
        await STEPS.pop(0)  # an exception thrown in, which the tool catches
    except LookupError as exc:
        got += len(str(exc))
    return Sum(sum=value.a + got, pid=os.getpid())


async def _waits_with_cleanup(value: Numbers, ctx: ToolContext) -> Sum:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        CLEANED.append(ctx.request_id)  # the cancellation reaches the tool, which may clean up
        raise
    return Sum(sum=0, pid=os.getpid())


STEPS: list[asyncio.Future[int]] = []
CLEANED: list[str] = []
SYNC_SLOW = dataclasses.replace(
    SLOW, name="sync_slow", path="/v1/tools/test/sync-slow", mode="inline", run=_sleeps_without_awaiting
)
STEPPED = dataclasses.replace(SLOW, name="stepped", run=_awaits_then_answers, time_limit_s=5)
CLEANING = dataclasses.replace(SLOW, name="cleaning", run=_waits_with_cleanup)


async def test_a_run_that_never_suspends_is_held_to_the_limit_once_it_has_run(kernel):
    with pytest.raises(TimeLimitExceeded) as past:
        await kernel.tool_runner.run(SYNC_SLOW, Numbers(a=4), request_id="req_sync", agent_id=None)
    assert past.value.limit_s == 0.3
    within = dataclasses.replace(SYNC_SLOW, time_limit_s=5)  # the same run, within its limit, answers
    ran = await kernel.tool_runner.run(within, Numbers(a=4), request_id="req_sync", agent_id=None)
    assert ran.output.sum == 4


async def test_a_run_that_suspends_gets_what_it_awaits_values_and_exceptions_alike(kernel):
    loop = asyncio.get_running_loop()
    sent, thrown = loop.create_future(), loop.create_future()
    STEPS[:] = [sent, thrown]
    run = asyncio.create_task(kernel.tool_runner.run(STEPPED, Numbers(a=1), request_id="req_s", agent_id=None))
    for _ in range(5):
        await asyncio.sleep(0)
    sent.set_result(10)
    for _ in range(5):
        await asyncio.sleep(0)
    thrown.set_exception(LookupError("four"))
    ran = await asyncio.wait_for(run, 5)
    assert ran.output.sum == 1 + 10 + len(str(LookupError("four")))
    assert STEPS == []


async def test_a_suspended_run_is_cancelled_at_the_limit_and_by_its_caller(kernel):
    CLEANED.clear()
    with pytest.raises(TimeLimitExceeded):
        await asyncio.wait_for(kernel.tool_runner.run(CLEANING, Numbers(a=1), request_id="req_l", agent_id=None), 10)
    run = asyncio.create_task(kernel.tool_runner.run(CLEANING, Numbers(a=1), request_id="req_c", agent_id=None))
    await asyncio.sleep(0.05)
    run.cancel()  # the caller's own cancellation stays a cancellation, not the time limit
    with pytest.raises(asyncio.CancelledError):
        await run
    assert CLEANED == ["req_l", "req_c"]
