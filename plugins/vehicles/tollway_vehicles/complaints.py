"""NHTSA complaints client: one `complaintsByVehicle` request and its parsing.

Like `nhtsa.py` (recalls) it only uses the `httpx.AsyncClient` it is handed and
turns every upstream failure into a `ToolError`. The complaints API differs from
the recalls API: lower-case `count`/`message`/`results`, and dates written
MM/DD/YYYY (the recalls API writes DD/MM/YYYY). Mirrors serving the pre-2020
`webapi.nhtsa.gov` shape (`Count`/`Results`, `ODINumber`, `Crash: "Yes"`,
`/Date(…)/` dates) are read too.
"""
from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from tollway import ToolError

from .nhtsa import REQUEST_TIMEOUT_S, parse_date, query_value

COMPLAINTS_PATH = "/complaints/complaintsByVehicle"
_MDY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_TRUE = {"true", "yes", "y", "1"}


@dataclass(frozen=True)
class ParsedComplaint:
    odi_number: int | None
    filed_on: str | None
    incident_on: str | None
    components: str | None
    summary: str | None
    manufacturer: str | None
    crash: bool
    fire: bool
    injuries: int
    deaths: int


@dataclass(frozen=True)
class ComplaintsPage:
    total: int  # NHTSA's own count (never fewer than the complaints it sent)
    complaints: list[ParsedComplaint]  # every complaint sent, in NHTSA's order


def _unavailable(message: str, **details: Any) -> ToolError:
    return ToolError("provider_unavailable", message, status=503, details=details or None)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    if isinstance(value, int):
        return value != 0
    return False


def _number(value: Any) -> int:
    """A non-negative count; anything absent or unreadable counts 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


def _odi(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def parse_complaint_date(value: Any) -> str | None:
    """MM/DD/YYYY (current API) -> YYYY-MM-DD; legacy `/Date(…)/` and ISO too."""
    text = _text(value)
    if text is None:
        return None
    m = _MDY.match(text)
    if m:
        month, day, year = (int(g) for g in m.groups())
        try:
            return _dt.date(year, month, day).isoformat()
        except ValueError:
            return None
    return parse_date(text)  # /Date(ms±hhmm)/ and ISO forms, shared with recalls


def _first(item: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in item and item[key] is not None:
            return item[key]
    return None


def parse_complaint(item: Mapping[str, Any]) -> ParsedComplaint:
    return ParsedComplaint(
        odi_number=_odi(_first(item, "odiNumber", "ODINumber")),
        filed_on=parse_complaint_date(_first(item, "dateComplaintFiled", "DateComplaintFiled")),
        incident_on=parse_complaint_date(_first(item, "dateOfIncident", "DateofIncident", "DateOfIncident")),
        components=_text(_first(item, "components", "Component")),
        summary=_text(_first(item, "summary", "Summary")),
        manufacturer=_text(_first(item, "manufacturer", "Manufacturer")),
        crash=_flag(_first(item, "crash", "Crash")),
        fire=_flag(_first(item, "fire", "Fire")),
        injuries=_number(_first(item, "numberOfInjuries", "NumberOfInjured")),
        deaths=_number(_first(item, "numberOfDeaths", "NumberOfDeaths")),
    )


def _results(body: Mapping[str, Any]) -> list[Any] | None:
    for key in ("results", "Results"):
        value = body.get(key)
        if isinstance(value, list):
            return value
    return None


def _count(body: Mapping[str, Any]) -> int | None:
    value = body.get("count", body.get("Count"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def parse_body(body: Any) -> ComplaintsPage:
    if not isinstance(body, Mapping):
        raise _unavailable("NHTSA answered with an unexpected document.")
    results = _results(body)
    if results is None:
        raise _unavailable("NHTSA answered without a result list.")
    complaints = [parse_complaint(item) for item in results if isinstance(item, Mapping)]
    count = _count(body)
    return ComplaintsPage(total=max(count or 0, len(complaints)), complaints=complaints)


def most_recent_first(complaints: list[ParsedComplaint]) -> list[ParsedComplaint]:
    """Newest filing date first (undated last), then the higher ODI number first."""
    return sorted(complaints, key=lambda c: (c.filed_on or "", c.odi_number or 0), reverse=True)


async def fetch_complaints(
    http: httpx.AsyncClient, base_url: str, make: str, model: str, model_year: int
) -> ComplaintsPage:
    """GET {base}/complaints/complaintsByVehicle?make=..&model=..&modelYear=.. and parse it."""
    url = base_url.rstrip("/") + COMPLAINTS_PATH
    params = {"make": query_value(make), "model": query_value(model), "modelYear": str(model_year)}
    try:
        response = await http.get(url, params=params, timeout=REQUEST_TIMEOUT_S)
    except httpx.TimeoutException as exc:
        raise _unavailable("NHTSA did not answer in time.", reason="timeout") from exc
    except httpx.HTTPError as exc:
        raise _unavailable("NHTSA could not be reached.", reason=type(exc).__name__) from exc
    status = response.status_code
    if status == 429:
        details: dict[str, Any] = {"upstream_status": 429}
        retry_after = response.headers.get("retry-after", "").strip()
        if retry_after.isdigit():
            details["retry_after"] = int(retry_after)
        raise ToolError("rate_limited", "NHTSA is limiting requests; try again later.", status=503, details=details)
    if status >= 500:
        raise _unavailable(f"NHTSA answered HTTP {status}.", upstream_status=status)
    try:
        body: Any = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        body = None
    if status in (400, 404):
        # Only a body that explicitly says "no complaints" is a completed, empty answer.
        if isinstance(body, Mapping) and _count(body) == 0 and _results(body) == []:
            return ComplaintsPage(total=0, complaints=[])
        raise _unavailable(f"NHTSA answered HTTP {status}.", upstream_status=status)
    if status != 200:
        raise _unavailable(f"NHTSA answered HTTP {status}.", upstream_status=status)
    if body is None:
        raise _unavailable("NHTSA answered with something other than JSON.", upstream_status=status)
    return parse_body(body)
