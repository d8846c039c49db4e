"""The job page's operator cancel: POST /console/jobs/{job_id}/cancel fails a job not finished
yet with the code `cancelled` through `Platform.cancel_job` (refunded as a failed job, the
agent notified) and goes back to the job's page; a job that already ended is refused (409)
and left as it is."""

from __future__ import annotations

from urllib.parse import quote

from tollway import Page, RouteCall

from .pages import _platform, _route, form, redirect, refused, signed_in


async def _cancel(call: RouteCall, session: str) -> Page:
    platform, job_id = _platform(call), call.params["job_id"]
    reason = form(call).get("reason", "").strip() or None
    outcome = await platform.cancel_job(job_id, reason)
    if outcome == "not_found":
        return refused(404, "Not found", "There is no such job.")
    if outcome == "finished":
        job = await platform.job_record(job_id) or {}
        ended = f"{job.get('status')}" + (f", {job['error_code']}" if job.get("error_code") else "")
        return refused(409, "Already finished", f"Job {job_id} has already ended ({ended}): nothing was changed.")
    return redirect(f"/console/jobs/{quote(job_id, safe='')}")


ROUTES = (
    _route(
        "POST",
        "/console/jobs/{job_id}/cancel",
        "console_cancel_job",
        "Cancel a job",
        signed_in(_cancel),
        statuses=(303, 403, 404, 409),
        param_docs=(("job_id", "The job's id (its request id)."),),
    ),
)
