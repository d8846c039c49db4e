"""NHTSA recalls client: one `recallsByVehicle` request and its parsing.

Uses only the `httpx.AsyncClient` it is handed (the kernel's `ctx.http`); it
never builds its own client, so tests replay recorded answers through a
transport. Every upstream failure becomes a `ToolError` (the call is not charged).
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from tollway import Setting
from tollway import ToolError

DEFAULT_BASE_URL = "https://api.nhtsa.gov"
BASE_URL_SETTING = Setting(
    family="vehicles",
    name="nhtsa_api_url",
    default=DEFAULT_BASE_URL,
    description="Base URL of the NHTSA recalls API (or a mirror / local replay server serving the same paths).",
)
RECALLS_PATH = "/recalls/recallsByVehicle"
# Bounded so a hung upstream cannot hold a paid call for long.
REQUEST_TIMEOUT_S = 15.0

_DMY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
# Legacy webapi.nhtsa.gov: "/Date(977115600000-0500)/" (ms since the epoch, local offset).
_MS_DATE = re.compile(r"^/?Date\((-?\d+)(?:([+-])(\d{2})(\d{2}))?\)/?$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$")
_TRUE = {"true", "yes", "y", "1"}


@dataclass(frozen=True)
class ParsedRecall:
    campaign_number: str | None
    reported_on: str | None
    component: str | None
    summary: str | None
    consequence: str | None
    remedy: str | None
    notes: str | None
    manufacturer: str | None
    park_it: bool
    park_outside: bool
    over_the_air_fix: bool


@dataclass(frozen=True)
class RecallsPage:
    """What NHTSA said: its own `Count` and every result it sent, in its order."""

    total: int
    recalls: list[ParsedRecall]


def _unavailable(message: str, **details: Any) -> ToolError:
    return ToolError("provider_unavailable", message, status=503, details=details or None)


def _text(value: Any) -> str | None:
    """A source string, trimmed; None for absent, null or blank values."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def _flag(value: Any) -> bool:
    """Booleans are false when absent (the legacy API never sends them)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    if isinstance(value, int):
        return value != 0
    return False


def parse_date(value: Any) -> str | None:
    """NHTSA's report date as YYYY-MM-DD, or None when absent or unreadable.

    Current API: DD/MM/YYYY (`18/11/2021`). Legacy API: `/Date(ms±hhmm)/`, read
    as the calendar date at the offset it carries. ISO dates pass through.
    """
    text = _text(value)
    if text is None:
        return None
    try:
        m = _DMY.match(text)
        if m:
            day, month, year = (int(g) for g in m.groups())
            return _dt.date(year, month, day).isoformat()
        m = _MS_DATE.match(text)
        if m:
            ms, sign, hh, mm = m.groups()
            offset = _dt.timedelta(0)
            if sign:
                offset = _dt.timedelta(hours=int(hh), minutes=int(mm))
                if sign == "-":
                    offset = -offset
            tz = _dt.timezone(offset)
            return _dt.datetime.fromtimestamp(int(ms) / 1000, tz=tz).date().isoformat()
        m = _ISO_DATE.match(text)
        if m:
            year, month, day = (int(g) for g in m.groups())
            return _dt.date(year, month, day).isoformat()
    except (ValueError, OverflowError, OSError):
        return None
    return None


def parse_recall(item: Mapping[str, Any]) -> ParsedRecall:
    """One NHTSA result (current or legacy shape) -> a Vehicle recall (docs/vehicles.md)."""
    consequence = item.get("Consequence")
    if _text(consequence) is None:
        consequence = item.get("Conequence")  # sic: the legacy API's spelling
    return ParsedRecall(
        campaign_number=_text(item.get("NHTSACampaignNumber")),
        reported_on=parse_date(item.get("ReportReceivedDate")),
        component=_text(item.get("Component")),
        summary=_text(item.get("Summary")),
        consequence=_text(consequence),
        remedy=_text(item.get("Remedy")),
        notes=_text(item.get("Notes")),
        manufacturer=_text(item.get("Manufacturer")),
        park_it=_flag(item.get("parkIt")),
        park_outside=_flag(item.get("parkOutSide")),
        over_the_air_fix=_flag(item.get("overTheAirUpdate")),
    )


def _results(body: Mapping[str, Any]) -> list[Any] | None:
    """The result list of either shape (`results` now, `Results` before 2020)."""
    for key in ("results", "Results"):
        value = body.get(key)
        if isinstance(value, list):
            return value
    return None


def _count(body: Mapping[str, Any]) -> int | None:
    value = body.get("Count", body.get("count"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def parse_body(body: Any) -> RecallsPage:
    """A decoded 200 answer -> RecallsPage; anything unreadable -> provider_unavailable."""
    if not isinstance(body, Mapping):
        raise _unavailable("NHTSA answered with an unexpected document.")
    results = _results(body)
    if results is None:
        raise _unavailable("NHTSA answered without a result list.")
    recalls = [parse_recall(item) for item in results if isinstance(item, Mapping)]
    count = _count(body)
    # `total` is the source's own Count (docs/vehicles.md), which may exceed the
    # results sent; never report fewer than were actually sent.
    total = max(count if count is not None else 0, len(recalls))
    return RecallsPage(total=total, recalls=recalls)


def _says_no_results(body: Any) -> bool:
    """A 400/404 counts as "no recalls" only when the body says so explicitly."""
    return isinstance(body, Mapping) and _count(body) == 0 and _results(body) == []


_NOT_JSON = object()


def _decode(response: httpx.Response) -> Any:
    try:
        return msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        return _NOT_JSON


def base_url_from(settings: Mapping[str, str]) -> str:
    """The configured base URL (setting `nhtsa_api_url`), without a trailing slash.

    The kernel's settings mapping is asked by setting name and by variable name;
    the environment is the last resort so an operator's mirror is never ignored.
    """
    s = BASE_URL_SETTING
    url = settings.get(s.name) or settings.get(s.env_var) or os.environ.get(s.env_var) or DEFAULT_BASE_URL
    return url.strip().rstrip("/") or DEFAULT_BASE_URL


def query_value(text: str) -> str:
    """What NHTSA is sent for make/model: trimmed, single-spaced, lower-case.

    NHTSA matches make and model without regard to case; one canonical form
    means one upstream URL per vehicle (and one recorded replay per vehicle).
    """
    return " ".join(text.split()).lower()


async def fetch_recalls(
    http: httpx.AsyncClient, base_url: str, make: str, model: str, model_year: int
) -> RecallsPage:
    """GET {base}/recalls/recallsByVehicle?make=..&model=..&modelYear=.. and parse it."""
    url = base_url.rstrip("/") + RECALLS_PATH
    params = {"make": query_value(make), "model": query_value(model), "modelYear": str(model_year)}
    try:
        response = await http.get(url, params=params, timeout=REQUEST_TIMEOUT_S)
    except httpx.TimeoutException as exc:
        raise _unavailable("NHTSA did not answer in time.", reason="timeout") from exc
    except httpx.HTTPError as exc:
        raise _unavailable("NHTSA could not be reached.", reason=type(exc).__name__) from exc

    status = response.status_code
    if status == 429:
        retry_after = response.headers.get("retry-after")
        details = {"upstream_status": 429}
        if retry_after and retry_after.strip().isdigit():
            details["retry_after"] = int(retry_after.strip())
        raise ToolError("rate_limited", "NHTSA is limiting requests; try again later.", status=503, details=details)
    if status >= 500:
        raise _unavailable(f"NHTSA answered HTTP {status}.", upstream_status=status)

    body = _decode(response)
    if status in (400, 404):
        if _says_no_results(body):
            return RecallsPage(total=0, recalls=[])
        raise _unavailable(f"NHTSA answered HTTP {status}.", upstream_status=status)
    if status != 200:
        raise _unavailable(f"NHTSA answered HTTP {status}.", upstream_status=status)
    if body is _NOT_JSON:
        raise _unavailable("NHTSA answered with something other than JSON.", upstream_status=status)
    return parse_body(body)
