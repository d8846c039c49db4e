"""SAM.gov Get Opportunities client: one `GET /opportunities/v2/search` request and its parsing.

Requests go through `SAM` (a `tollway.Upstream`): the kernel's shared client, the
`sam_api_url` / `sam_api_key` settings, and one mapping of upstream failures to a
`ToolError` (the call is not charged). The lookup tool and the watch source share it.

SAM.gov wants its API key in the query string (`api_key`), so the key is part of every
request URL. It must never leave this module: errors are re-raised without the
transport exception that carries the request, and `RedactKeys` scrubs `api_key=` from
the HTTP client's log lines.

Answer shape: `{totalRecords, limit, offset, opportunitiesData: [item, ...], links}`.
SAM.gov documents 404 as "No Data found" and sends key problems as
"No api_key was supplied" / "An invalid api_key was supplied".
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from tollway import Reply, ToolError, Upstream, source_int

from .notice import Solicitation, parse_notice

SAM = Upstream(
    family="solicitations",
    name="sam",
    label="SAM.gov",
    default_base_url="https://api.sam.gov",
    description="Base URL of SAM.gov's public API, serving Get Opportunities v2 at /opportunities/v2/search (or a mirror / local replay server serving that path).",
    api_key="SAM.gov public API key (SAM.gov, Account Details), sent as `api_key`. The solicitations tool and watch source need it.",
)
API_KEY = SAM.api_key_setting  # `sam_api_key`, TOLLWAY_SOLICITATIONS_SAM_API_KEY: required
assert API_KEY is not None
SEARCH_PATH = "/opportunities/v2/search"
# The name of the public service the data comes from (run by the U.S. General Services
# Administration): `evidence.source` of the lookup and `source` of its facts and watch changes.
SOURCE = "SAM.gov"
# SAM.gov refuses a posted-date window of a year or more; a notice looked up by id is
# searched for among those posted in the 364 days up to today.
NOTICE_WINDOW_DAYS = 364
# SAM.gov's notice types (its `type` values) and the `ptype` codes that select them.
NOTICE_TYPES: dict[str, str] = {
    "Justification": "u",
    "Presolicitation": "p",
    "Award Notice": "a",
    "Sources Sought": "r",
    "Special Notice": "s",
    "Solicitation": "o",
    "Sale of Surplus Property": "g",
    "Combined Synopsis/Solicitation": "k",
    "Intent to Bundle Requirements (DoD-Funded)": "i",
}
_NO_DATA = ("no data found",)
_KEY_PROBLEMS = (
    "api_key was supplied",
    "api_key_missing",
    "api_key_invalid",
    "api_key_disabled",
    "api_key_unauthorized",
)
_KEY_IN_TEXT = re.compile(r"(api_key=)[^&\s\"'>]+", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    total: int  # SAM.gov's totalRecords (never fewer than the notices it sent)
    notices: list[Solicitation]  # in SAM.gov's order


def today() -> _dt.date:
    return _dt.datetime.now(_dt.UTC).date()


def sam_date(day: _dt.date) -> str:
    """SAM.gov's date format, MM/dd/yyyy."""
    return day.strftime("%m/%d/%Y")


def redact(text: str) -> str:
    """`text` with the value of every `api_key=` query parameter replaced."""
    return _KEY_IN_TEXT.sub(r"\1[redacted]", text)


class RedactKeys(logging.Filter):
    """Scrubs `api_key=` values from a logger's records (the HTTP client logs each URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the handler's to report, not ours
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


def guard_logs(name: str = "httpx") -> None:
    """Install `RedactKeys` on the logger `name` once (before the first request)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactKeys) for f in logger.filters):
        logger.addFilter(RedactKeys())


def not_configured() -> ToolError:
    var = API_KEY.env_var
    return ToolError(
        "provider_unavailable",
        f"SAM.gov needs an API key: the operator must set {var}. Nothing was charged.",
        status=503,
        details={"reason": "not_configured", "settings": [var]},
    )


def _says(reply: Reply, phrases: tuple[str, ...]) -> bool:
    body = reply.content[:8192].decode("utf-8", "replace").lower()
    return any(p in body for p in phrases)


def parse_body(body: Any) -> Page:
    """A decoded 200 answer -> Page; anything unreadable -> provider_unavailable."""
    if not isinstance(body, Mapping):
        raise SAM.unavailable("SAM.gov answered with an unexpected document.")
    items = body.get("opportunitiesData")
    total = source_int(body.get("totalRecords"))
    if items is None and total == 0:
        items = []
    if not isinstance(items, list):
        raise SAM.unavailable("SAM.gov answered without a result list.")
    notices = [n for n in (parse_notice(i) for i in items if isinstance(i, Mapping)) if n is not None]
    return Page(total=max(total or 0, len(notices)), notices=notices)


async def fetch(http: httpx.AsyncClient, settings: Mapping[str, str], params: Mapping[str, str]) -> Page:
    """One search with `params` (dates, limit, filters); the key is added here."""
    key = SAM.api_key(settings)
    if key is None:
        raise not_configured()
    guard_logs()
    try:
        reply = await SAM.send(http, SEARCH_PATH, base_url=SAM.base_url(settings), params={**params, "api_key": key})
    except ToolError as exc:  # drop the transport error: its request holds the key
        raise ToolError(exc.code, exc.message, exc.status, exc.details) from None
    if reply.status == 404 and _says(reply, _NO_DATA):
        return Page(total=0, notices=[])
    if not reply.ok and reply.status != 429 and _says(reply, _KEY_PROBLEMS):
        raise ToolError(
            "provider_auth",
            "SAM.gov refused the service's API key.",
            status=503,
            details={"upstream_status": reply.status},
        )
    return parse_body(SAM.json_of(reply))


def window_params(posted_from: _dt.date, posted_to: _dt.date, limit: int) -> dict[str, str]:
    return {"postedFrom": sam_date(posted_from), "postedTo": sam_date(posted_to), "limit": str(limit), "offset": "0"}


async def search(
    http: httpx.AsyncClient,
    settings: Mapping[str, str],
    *,
    posted_from: _dt.date,
    posted_to: _dt.date,
    limit: int,
    title: str | None = None,
    naics: str | None = None,
    notice_type: str | None = None,
) -> Page:
    """Notices posted in the window, filtered by title words, NAICS code and type."""
    params = window_params(posted_from, posted_to, limit)
    if title:
        params["title"] = title
    if naics:
        params["ncode"] = naics
    if notice_type:
        params["ptype"] = NOTICE_TYPES[notice_type]
    return await fetch(http, settings, params)


def notice_window(day: _dt.date | None = None) -> tuple[_dt.date, _dt.date]:
    """Where a notice is looked for by id: the NOTICE_WINDOW_DAYS up to `day` (today)."""
    end = day or today()
    return end - _dt.timedelta(days=NOTICE_WINDOW_DAYS), end


async def fetch_notice(
    http: httpx.AsyncClient,
    settings: Mapping[str, str],
    notice_id: str,
    *,
    posted_from: _dt.date | None = None,
    posted_to: _dt.date | None = None,
) -> Solicitation | None:
    """The notice with this id posted in the window (default `notice_window()`), or None.
    Only an exact id match counts (a mirror that ignored the filter passes off nothing)."""
    default_from, default_to = notice_window(posted_to)
    params = window_params(posted_from or default_from, posted_to or default_to, 1)
    params["noticeid"] = notice_id
    page = await fetch(http, settings, params)
    return next((n for n in page.notices if n.notice_id == notice_id), None)
