"""The website tests' helpers: a five-page brief, and running a build or an update through
the whole job machinery (credits, a worker, polling the job)."""

from __future__ import annotations

from typing import Any

from tollway.testing import wait_for_job, worker_for

FIVE_PAGES = {
    "name": "Harbour Ferries",
    "description": "A small ferry line between the North quay and the Island, running since 1998.",
    "pages": [
        {"title": "Home", "purpose": "Welcome visitors and say what we do.",
         "content": "Ferries between the North quay and the Island, every day of the year.\n\n"
                    "## Today\n- First boat 07:40\n- Last boat 19:10"},
        {"title": "Timetable", "purpose": "Show the daily timetable.",
         "content": "Boats leave the North quay at 07:40, 09:10, 12:30, 16:00 and 19:10."},
        {"title": "Fares", "purpose": "List the fares.",
         "content": "- Adult: 4.50 USD\n- Child: 2.00 USD\n- Bicycle: free"},
        {"title": "About us", "purpose": "Tell the line's story.",
         "content": "A family business since 1998.\n\nOur two boats carry 60 passengers each."},
        {"title": "Contact", "purpose": "How to reach the office.",
         "content": "Write to the office; we answer within a day."},
    ],
    "style": {"palette": "harbour", "font": "humanist"},
    "contact_email": "office@harbour.example",
}  # fmt: skip


async def finished(client: Any, request_id: str, headers: dict[str, str]) -> dict[str, Any]:
    """The job once it completed or failed (polled within free_read's limit, up to three minutes)."""
    job = await wait_for_job(client, request_id, headers, tries=360, every_s=0.5)
    assert job["status"] in ("completed", "failed"), f"{request_id} did not finish: {job}"
    return job


async def run_job(kernel: Any, client: Any, auth: dict[str, str], path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Pay from credits, run on a worker, answer the finished job."""
    worker = worker_for(kernel, poll_s=0.05)
    worker.start()
    try:
        accepted = await client.post(path, json=body, headers=auth)
        assert accepted.status_code == 202, accepted.text
        return await finished(client, accepted.json()["request_id"], auth)
    finally:
        await worker.stop()


async def balance(client: Any, auth: dict[str, str]) -> str:
    return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
