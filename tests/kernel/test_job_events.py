"""A job's events (core/jobs/job_events.py) on SQLite and PostgreSQL: each step of its life is
a row written with the state change, listed oldest first; a lease that ran out shows as a
retry on another worker; only a job's latest progress rows are kept; the rows go with the
job when it is purged."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.jobs_plugin import JobsPlugin
from tollway._core.jobs import job_events, jobs
from tollway._core.jobs.tables import JobEvent
from tollway._core.storage.sql import fetch
from tollway.testing import credits_session, http_client


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("jobs", JobsPlugin())])


def _steps(events):
    return [(e["kind"], e["attempt"], e["text"]) for e in events]


async def test_a_job_that_lost_its_lease_and_then_completed_lists_its_steps_in_order(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        body = {"a": 1, "b": 2, "report": "reading the page"}
        accepted = (await client.post("/v1/tools/test/gate-job", json=body, headers=auth)).json()
    job_id = accepted["request_id"]
    skip = kernel.db.kind == "postgres"
    assert _steps(await kernel.platform.job_events(job_id)) == [("accepted", None, None)]
    first = await jobs.claim("worker-a", lease_s=0.05, skip_locked=skip, bus=kernel.events)
    assert first is not None and first.id == job_id
    assert await jobs.claim("worker-b", lease_s=30, skip_locked=skip, bus=kernel.events) is None  # a poll: no row
    await asyncio.sleep(0.1)  # a's lease runs out without a heartbeat
    second = await jobs.claim("worker-b", lease_s=30, skip_locked=skip, bus=kernel.events)
    assert second is not None and second.attempt == 2
    assert await kernel.job_runner.run_claimed(first, lease_s=30) == "fenced"  # its report and result: nothing
    assert await kernel.job_runner.run_claimed(second, lease_s=30) == "completed"

    events = await kernel.platform.job_events(job_id)
    assert _steps(events) == [
        ("accepted", None, None),
        ("started", 1, "worker-a"),
        ("retried", 2, "worker-b"),
        ("progress", 2, "reading the page"),
        ("completed", 2, None),
    ]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)


async def test_a_job_keeps_only_its_latest_progress_rows(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()
    claimed = await jobs.claim("worker-a", lease_s=30, skip_locked=kernel.db.kind == "postgres")
    assert claimed is not None
    total = job_events.PROGRESS_KEPT + 30
    for i in range(total):
        assert await jobs.report(claimed.id, claimed.attempt, f"step {i}")
    events = await kernel.platform.job_events(accepted["request_id"])
    progress = [e["text"] for e in events if e["kind"] == "progress"]
    assert progress == [f"step {i}" for i in range(30, total)]  # the latest 100, oldest first
    assert [e["kind"] for e in events[:2]] == ["accepted", "started"]  # the other steps are all kept
    assert await JobEvent.count().where(JobEvent.job_id == claimed.id) == job_events.PROGRESS_KEPT + 2
    # a report of an attempt that is no longer the job's writes nothing
    assert not await jobs.report(claimed.id, claimed.attempt + 1, "not mine")
    assert await JobEvent.count().where(JobEvent.job_id == claimed.id) == job_events.PROGRESS_KEPT + 2


async def test_purged_jobs_take_their_events_with_them(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        old = (await client.post("/v1/tools/test/add-numbers", json={"a": 1}, headers=auth)).json()["request_id"]
        new = (await client.post("/v1/tools/test/add-numbers", json={"a": 2}, headers=auth)).json()["request_id"]
    await fetch("UPDATE tw_jobs SET created_ms = created_ms - {} WHERE id = {}", 31 * 86_400_000, old)
    task = next(t for t in kernel.periodic_tasks if t.name == "purge_old_jobs")
    await task.run(kernel.context)
    assert await JobEvent.count().where(JobEvent.job_id == old) == 0
    assert await JobEvent.count().where(JobEvent.job_id == new) == 1
