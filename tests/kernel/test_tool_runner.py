"""One tool runner for paid calls, jobs and delegated (goal) calls: a `cpu_bound` tool runs
in the worker's process pool whoever calls it, and a tool's time limit ends its run the
same way on every path (failed, not charged)."""

from __future__ import annotations

import asyncio
import dataclasses
import os

import pytest

from tests.kernel.test_jobs import wait_for_status
from tests.support.jobs_plugin import SLOW, JobsPlugin
from tollway import hookimpl
from tollway._core.calls.tool_runner import TimeLimitExceeded
from tollway._core.jobs import jobs
from tollway._runtime.worker import Worker
from tollway.testing import credits_session, http_client

SLOW_INLINE = dataclasses.replace(SLOW, name="slow_inline", path="/v1/tools/test/slow-inline", mode="inline")


class SlowInlinePlugin:
    @hookimpl
    def register_tools(self, register):
        register(SLOW_INLINE)


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
    # paid inline call: failed with the limit, refunded (not charged)
    assert inline.status_code == 500, inline.text
    assert inline.json()["error"] == "internal_error" and "time limit of 0.3 s" in inline.json()["message"]
    assert before == after
    # job: failed with the limit, refunded
    assert failed_job["status"] == "failed" and failed_job["error_code"] == "internal_error"
    assert "time limit of 0.3 s" in failed_job["error"]
    # goal step (delegated call): the same failure, raised to the loop
    assert delegated.value.code == "internal_error" and delegated.value.limit_s == 0.3
