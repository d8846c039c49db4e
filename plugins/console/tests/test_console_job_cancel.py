"""A job's page over HTTP (SQLite and PostgreSQL): its events oldest first, and the operator's
cancel form (a session and its CSRF token wanted; a finished job refused with 409, nothing
changed; the credits back once)."""

from __future__ import annotations

import re

from console_support import SeedPlugin, sign_in

from tollway.testing import credits_session, http_client, ledger_problems, wait_for_job, worker_for
from tollway_console import plugin as hooks

EVENT = re.compile(r'<tr data-event="(\w+)">')


async def test_a_job_page_lists_its_events_oldest_first(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job_id = (await client.post("/v1/tools/seed/report", json={"text": "x"}, headers=auth)).json()["request_id"]
        worker = worker_for(kernel)
        worker.start()
        try:
            assert (await wait_for_job(client, job_id, auth, every_s=0.05))["status"] == "completed"
        finally:
            await worker.stop()
        await sign_in(client)
        page = (await client.get(f"/console/jobs/{job_id}")).text
    assert EVENT.findall(page) == ["accepted", "started", "completed"]
    assert 'action="/console/jobs/' not in page  # a finished job has no cancel form


async def test_the_operator_cancels_a_pending_job_once_through_the_form(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (await client.post("/v1/tools/seed/report", json={"text": "x"}, headers=auth)).json()
        job_id, cancel = accepted["request_id"], f"/console/jobs/{accepted['request_id']}/cancel"

        nobody = await client.post(cancel, data={"reason": "no session"})
        assert nobody.status_code == 303 and nobody.headers["location"] == "/console/sign-in"
        csrf = await sign_in(client)
        page = (await client.get(f"/console/jobs/{job_id}")).text
        assert f'action="{cancel}"' in page and EVENT.findall(page) == ["accepted"]
        assert (await client.post(cancel, data={"reason": "no token"})).status_code == 403
        assert (await client.post(cancel, data={"csrf": "0" * 64})).status_code == 403
        assert (await client.get(f"/v1/requests/{job_id}", headers=auth)).json()["status"] == "pending"
        assert (await client.get("/v1/balance", headers=auth)).json()["credits_balance"] == "0.950000"

        done = await client.post(cancel, data={"csrf": csrf, "reason": "asked by the agent"})
        assert done.status_code == 303 and done.headers["location"] == f"/console/jobs/{job_id}"
        page = (await client.get(f"/console/jobs/{job_id}")).text
        assert 'data-status="failed"' in page and "cancelled: Cancelled by the operator: asked by the agent." in page
        assert EVENT.findall(page) == ["accepted", "cancelled"] and f'action="{cancel}"' not in page

        again = await client.post(cancel, data={"csrf": csrf})
        assert again.status_code == 409 and "has already ended (failed, cancelled)" in again.text
        missing = await client.post("/console/jobs/req_nosuchjob/cancel", data={"csrf": csrf})
        assert missing.status_code == 404
        job = (await client.get(f"/v1/requests/{job_id}", headers=auth)).json()
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
    assert job["status"] == "failed" and job["error_code"] == "cancelled"
    assert balance == "1.000000"  # the 0.05 came back, once
    receipt = await kernel.receipts.get(accepted["receipt_id"])
    assert receipt["status"] == "refunded" and receipt["revision"] == 2
    assert await ledger_problems() == []
