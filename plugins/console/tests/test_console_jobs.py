"""The jobs pages over HTTP (SQLite and PostgreSQL): jobs counted by state, the oldest ones
not finished, and one job's record, never its input or result."""

from __future__ import annotations

import re

from console_support import SeedPlugin, sign_in

from tollway.testing import credits_session, http_client, wait_for_job, worker_for
from tollway_console import plugin as hooks

COUNT = re.compile(r'data-status="(\w+)" data-count="(\d+)"')
PRIVATE = "the-agents-private-input"


async def test_jobs_are_counted_by_state_and_each_has_a_page_without_its_input(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "5")
        accepted = []
        for _ in range(3):
            answer = await client.post("/v1/tools/seed/report", json={"text": PRIVATE}, headers=auth)
            assert answer.status_code == 202, answer.text
            accepted.append(answer.json()["request_id"])
        await sign_in(client)

        page = (await client.get("/console/jobs")).text
        assert dict(COUNT.findall(page)) == {"pending": "3"}
        assert re.findall(r'<tr data-job="([^"]+)">', page) == accepted  # oldest first
        one = await client.get(f"/console/jobs/{accepted[0]}")
        assert one.status_code == 200 and "seed_report" in one.text and 'data-status="pending"' in one.text
        assert PRIVATE not in page and PRIVATE not in one.text

        worker = worker_for(kernel)
        worker.start()
        try:
            for job_id in accepted:
                assert (await wait_for_job(client, job_id, auth, every_s=0.1))["status"] == "completed"
        finally:
            await worker.stop()
        page = (await client.get("/console/jobs")).text
        assert dict(COUNT.findall(page)) == {"completed": "3"} and "Every job has finished." in page
        done = (await client.get(f"/console/jobs/{accepted[0]}")).text
        assert 'data-status="completed"' in done and "/console/receipts/rcpt_" in done and PRIVATE not in done
        assert (await client.get("/console/jobs/req_nosuchjob")).status_code == 404
