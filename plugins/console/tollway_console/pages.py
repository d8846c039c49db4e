"""The console's routes: sign-in and sign-out, the overview (with its activity panel, which
its script refreshes), the receipts, the agents (and granting credits), the jobs, and the static
files. Every page but sign-in wants a live session (else a 303 to the sign-in page), every
POST a valid CSRF token (else 403), and every answer carries a strict
Content-Security-Policy: the pages load only the console's own files and run no inline
script or style (docs/console.md)."""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qsl, quote

import jinja2

from tollway import Page, Platform, Route, RouteCall, now_ms

from . import agents, chart, overview, receipts, sessions

HTML = "text/html; charset=utf-8"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
SIGN_IN = "/console/sign-in"
STATIC = Path(__file__).parent / "static"
STATIC_FILES = (  # name served, file, media type
    ("console.css", "console.css", "text/css; charset=utf-8"),
    ("console.js", "console.js", "text/javascript; charset=utf-8"),
)
PERIODS = (7, 30, 90)
UNFINISHED_JOBS = 50  # the oldest jobs not finished, on the jobs page
TAGS = ("console",)
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
# The pages the navigation links to: (path, label).
NAVIGATION = (
    ("/console", "Overview"),
    ("/console/receipts", "Receipts"),
    ("/console/agents", "Agents"),
    ("/console/jobs", "Jobs"),
    ("/console/webhooks", "Watches & webhooks"),
    ("/console/plugins", "Plugins"),
)
# The operator pages the installed plugins provide, after NAVIGATION (set per request by `signed_in`).
OPERATOR_NAVIGATION: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "operator_navigation", default=()
)


def render(name: str, status: int = 200, headers: dict[str, str] | None = None, **values: object) -> Page:
    navigation = NAVIGATION + OPERATOR_NAVIGATION.get()
    html = TEMPLATES.get_template(name).render(navigation=navigation, **values)
    return Page(html, status=status, headers={**HEADERS, **(headers or {})}, media_type=HTML)


def redirect(to: str, cookie: str | None = None) -> Page:
    headers = {**HEADERS, "Location": to}
    if cookie is not None:
        headers["Set-Cookie"] = cookie
    return Page(b"", status=303, headers=headers, media_type=HTML)


def refused(status: int, title: str, message: str) -> Page:
    return render("refused.html", status=status, title=title, message=message, csrf=None, here="", signed_in=False)


def form(call: RouteCall) -> dict[str, str]:
    """An url-encoded form's fields (the last of each name)."""
    return dict(parse_qsl(call.request.body.decode("utf-8", "replace"), keep_blank_values=True))


Handler = Callable[[RouteCall, str], Awaitable[Page]]


def signed_in(handler: Handler) -> Callable[[RouteCall], Awaitable[Page]]:
    """The page for a live session only (303 to sign-in otherwise); a POST also wants the
    session's CSRF token in its form (403 otherwise). The handler gets the session's secret."""

    async def page(call: RouteCall) -> Page:
        session = await sessions.current(call)
        if session is None:
            return redirect(SIGN_IN)
        OPERATOR_NAVIGATION.set(tuple((f"/console/view/{p.name}", p.title) for p in _platform(call).operator_pages()))
        if call.request.method == "POST" and not sessions.csrf_ok(session, form(call).get("csrf", "")):
            return refused(403, "Refused", "The form's security token is missing or wrong. Reload the page and retry.")
        return await handler(call, session)

    page.__name__ = handler.__name__
    return page


async def sign_in_page(call: RouteCall, *, error: str | None = None, status: int = 200) -> Page:
    if error is None and await sessions.current(call) is not None:
        return redirect("/console")
    nonce = sessions.cookies(call).get(sessions.SIGN_IN_COOKIE) or ""
    if not 20 <= len(nonce) <= 100:
        nonce = secrets.token_urlsafe(24)
    cookie = sessions.set_cookie(call, sessions.SIGN_IN_COOKIE, nonce, sessions.SIGN_IN_TTL_S)
    return render(
        "sign_in.html",
        status=status,
        headers={"Set-Cookie": cookie},
        csrf=sessions.csrf_for(nonce),
        error=error,
        here=SIGN_IN,
        signed_in=False,
    )


async def show_sign_in(call: RouteCall) -> Page:
    return await sign_in_page(call)


async def sign_in(call: RouteCall) -> Page:
    fields = form(call)
    nonce = sessions.cookies(call).get(sessions.SIGN_IN_COOKIE) or ""
    if not nonce or not sessions.csrf_ok(nonce, fields.get("csrf", "")):
        return refused(
            403, "Refused", "The sign-in form's security token is missing or wrong. Reload the page and retry."
        )
    if not _platform(call).is_operator_token(fields.get("token", "").strip()):
        return await sign_in_page(call, error="That is not the operator token.", status=401)
    session = await sessions.start()
    return redirect("/console", sessions.set_cookie(call, sessions.SESSION_COOKIE, session, sessions.SESSION_TTL_S))


async def _sign_out(call: RouteCall, session: str) -> Page:
    await sessions.end(session)
    return redirect(SIGN_IN, sessions.set_cookie(call, sessions.SESSION_COOKIE, "", 0))


def _period(call: RouteCall) -> int:
    raw = call.query.get("days", "")
    return int(raw) if raw in {str(p) for p in PERIODS} else 30


def _platform(call: RouteCall) -> Platform:
    if call.platform is None:  # routes run on a started service
        raise RuntimeError("the console runs on a started service")
    return call.platform


async def _overview(call: RouteCall, session: str) -> Page:
    platform, now, days = _platform(call), now_ms(), _period(call)
    first, by_category, by_method = await overview.revenue(platform, days, now)
    pending = await platform.pending_money()
    return render(
        "overview.html",
        csrf=sessions.csrf_for(session),
        here="/console",
        signed_in=True,
        days=days,
        periods=PERIODS,
        by_category=chart.stacked(f"Revenue per day by category, last {days} days", first, days, by_category),
        by_method=chart.stacked(f"Revenue per day by payment method, last {days} days", first, days, by_method),
        minutes=await overview.activity(platform, now),
        latency=await platform.tool_latency(now - overview.DAY_MS),
        outstanding=await platform.credits_outstanding(),
        pending=pending["pending"],
    )


async def _activity(call: RouteCall, session: str) -> Page:
    return render("activity.html", minutes=await overview.activity(_platform(call), now_ms()))


async def _receipts(call: RouteCall, session: str) -> Page:
    filters = receipts.Filters.of(call)
    page = await receipts.listing(_platform(call), filters)
    return render(
        "receipts.html",
        csrf=sessions.csrf_for(session),
        here="/console/receipts",
        signed_in=True,
        filters=filters,
        periods=receipts.PERIODS,
        categories=receipts.CATEGORIES,
        receipts=page["receipts"],
        next=filters.query(before=page["next"]) if page["next"] else None,
        first=filters.query(before="") if filters.before else None,
    )


async def _receipt(call: RouteCall, session: str) -> Page:
    revisions = await receipts.revisions(_platform(call), call.params["receipt_id"])
    if not revisions:
        return refused(404, "Not found", "There is no such receipt.")
    return render(
        "receipt.html",
        csrf=sessions.csrf_for(session),
        here="/console/receipts",
        signed_in=True,
        current=revisions[-1].body,
        revisions=revisions,
    )


async def _agents(call: RouteCall, session: str) -> Page:
    wanted = (call.query.get("agent") or "").strip()
    if wanted:  # the lookup form: straight to that agent's page
        return redirect(f"/console/agents/{quote(wanted[:64], safe='')}")
    return render(
        "agents.html",
        csrf=sessions.csrf_for(session),
        here="/console/agents",
        signed_in=True,
        agents=await _platform(call).agents_by_credits(agents.TOP),
    )


async def _agent_page(call: RouteCall, session: str, *, error: str | None = None, status: int = 200) -> Page:
    account = await _platform(call).agent_account(call.params["agent_id"], agents.LEDGER_ROWS)
    if account is None:
        return refused(404, "Not found", "There is no such agent.")
    return render(
        "agent.html",
        status=status,
        csrf=sessions.csrf_for(session),
        here="/console/agents",
        signed_in=True,
        agent=account,
        tokens=await _platform(call).access_tokens(str(account["agent_id"]), agents.TOKENS),
        error=error,
    )


async def _agent(call: RouteCall, session: str) -> Page:
    return await _agent_page(call, session)


async def _grant(call: RouteCall, session: str) -> Page:
    fields = form(call)
    amount = agents.grant_amount(fields.get("amount", ""))
    if isinstance(amount, str):
        return await _agent_page(call, session, error=amount, status=400)
    platform = _platform(call)
    account = await platform.agent_account(call.params["agent_id"], 0)
    if account is None:
        return refused(404, "Not found", "There is no such agent.")
    memo = fields.get("memo", "").strip()[:1000] or None
    await platform.grant_credits(str(account["agent_id"]), amount, memo)
    return redirect(f"/console/agents/{account['agent_id']}")


async def _jobs(call: RouteCall, session: str) -> Page:
    platform = _platform(call)
    return render(
        "jobs.html",
        csrf=sessions.csrf_for(session),
        here="/console/jobs",
        signed_in=True,
        counts=await platform.job_counts(),
        unfinished=await platform.unfinished_jobs(UNFINISHED_JOBS),
    )


async def _job(call: RouteCall, session: str) -> Page:
    platform = _platform(call)
    job = await platform.job_record(call.params["job_id"])
    if job is None:
        return refused(404, "Not found", "There is no such job.")
    events = await platform.job_events(str(job["job_id"]))
    return render(
        "job.html", csrf=sessions.csrf_for(session), here="/console/jobs", signed_in=True, job=job, events=events
    )


async def static_file(call: RouteCall) -> Page:
    name = call.params["file"]
    for served, path, media_type in STATIC_FILES:
        if served == name:
            headers = {**HEADERS, "Cache-Control": "no-cache"}
            return Page((STATIC / path).read_bytes(), headers=headers, media_type=media_type)
    return refused(404, "Not found", "There is no such file.")


def _route(method: str, path: str, name: str, title: str, handle, **extra) -> Route:
    return Route(
        method=method,
        path=path,
        name=name,
        title=title,
        description=f"The operator console: {title[0].lower()}{title[1:]} (docs/console.md).",
        handle=handle,
        auth="public",  # the console checks its own session cookie
        page=True,
        rate_limit=extra.pop("rate_limit", None),
        tags=TAGS,
        statuses=extra.pop("statuses", (303,)),
        raw_body=method == "POST",
        **extra,
    )


ROUTES = (
    _route("GET", "/console", "console_overview", "The overview", signed_in(_overview)),
    _route("GET", "/console/activity", "console_activity", "Calls and errors per minute", signed_in(_activity)),
    _route("GET", "/console/receipts", "console_receipts", "The receipts", signed_in(_receipts)),
    _route(
        "GET",
        "/console/receipts/{receipt_id}",
        "console_receipt",
        "A receipt and its revisions",
        signed_in(_receipt),
        statuses=(303, 404),
        param_docs=(("receipt_id", "The receipt's id."),),
    ),
    _route("GET", "/console/agents", "console_agents", "The agents", signed_in(_agents)),
    _route(
        "GET",
        "/console/agents/{agent_id}",
        "console_agent",
        "An agent's balance and ledger",
        signed_in(_agent),
        statuses=(303, 404),
        param_docs=(("agent_id", "The agent's id or wallet address."),),
    ),
    _route(
        "POST",
        "/console/agents/{agent_id}/grant",
        "console_grant_credits",
        "Grant an agent credits",
        signed_in(_grant),
        statuses=(303, 400, 403, 404),
        param_docs=(("agent_id", "The agent's id."),),
    ),
    _route("GET", "/console/jobs", "console_jobs", "The jobs", signed_in(_jobs)),
    _route(
        "GET",
        "/console/jobs/{job_id}",
        "console_job",
        "A job's record",
        signed_in(_job),
        statuses=(303, 404),
        param_docs=(("job_id", "The job's id (its request id)."),),
    ),
    _route("GET", SIGN_IN, "console_sign_in_page", "The sign-in page", show_sign_in, statuses=(303,)),
    _route("POST", SIGN_IN, "console_sign_in", "Sign in", sign_in, statuses=(303, 401, 403), rate_limit="free_read"),
    _route("POST", "/console/sign-out", "console_sign_out", "Sign out", signed_in(_sign_out), statuses=(303, 403)),
    _route(
        "GET",
        "/console/static/{file}",
        "console_static",
        "A file of the console's own",
        static_file,
        statuses=(404,),
        param_docs=(("file", "The file's name."),),
    ),
)
