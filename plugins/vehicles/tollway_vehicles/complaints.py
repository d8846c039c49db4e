"""NHTSA complaints client: one `complaintsByVehicle` request and its parsing.

It asks NHTSA through `nhtsa.fetch_by_vehicle` (the same `tollway.Upstream` as the
recalls, so the same settings and failure mapping). The complaints API differs from
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

import msgspec

from tollway import ToolContext, source_int, source_text

from .nhtsa import fetch_by_vehicle, flag, parse_date, parse_results

COMPLAINTS_PATH = "/complaints/complaintsByVehicle"
_MDY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")


class Complaint(msgspec.Struct):
    """One owner complaint; strings are null when NHTSA gives none."""

    odi_number: int | None  # NHTSA's complaint (ODI) number
    filed_on: str | None  # YYYY-MM-DD the complaint was filed
    incident_on: str | None  # YYYY-MM-DD of the incident
    components: str | None  # NHTSA's component text as sent (comma-joined; names may hold commas)
    summary: str | None
    manufacturer: str | None
    crash: bool
    fire: bool
    injuries: int
    deaths: int


@dataclass(frozen=True)
class ComplaintsPage:
    total: int  # NHTSA's own count (never fewer than the complaints it sent)
    complaints: list[Complaint]  # every complaint sent, in NHTSA's order


def _number(value: Any) -> int:
    """A non-negative count; anything absent or unreadable counts 0."""
    return max(source_int(value) or 0, 0)


def parse_complaint_date(value: Any) -> str | None:
    """MM/DD/YYYY (current API) -> YYYY-MM-DD; legacy `/Date(…)/` and ISO too."""
    text = source_text(value)
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


def parse_complaint(item: Mapping[str, Any]) -> Complaint:
    return Complaint(
        odi_number=source_int(_first(item, "odiNumber", "ODINumber")),
        filed_on=parse_complaint_date(_first(item, "dateComplaintFiled", "DateComplaintFiled")),
        incident_on=parse_complaint_date(_first(item, "dateOfIncident", "DateofIncident", "DateOfIncident")),
        components=source_text(_first(item, "components", "Component")),
        summary=source_text(_first(item, "summary", "Summary")),
        manufacturer=source_text(_first(item, "manufacturer", "Manufacturer")),
        crash=flag(_first(item, "crash", "Crash")),
        fire=flag(_first(item, "fire", "Fire")),
        injuries=_number(_first(item, "numberOfInjuries", "NumberOfInjured")),
        deaths=_number(_first(item, "numberOfDeaths", "NumberOfDeaths")),
    )


def parse_body(body: Any) -> ComplaintsPage:
    total, items = parse_results(body, ("count", "Count"))
    return ComplaintsPage(total=total, complaints=[parse_complaint(item) for item in items])


def most_recent_first(complaints: list[Complaint]) -> list[Complaint]:
    """Newest filing date first (undated last), then the higher ODI number first."""
    return sorted(complaints, key=lambda c: (c.filed_on or "", c.odi_number or 0), reverse=True)


async def fetch_complaints(ctx: ToolContext, make: str, model: str, model_year: int) -> ComplaintsPage:
    """The complaints NHTSA lists for one model year of a vehicle."""
    body = await fetch_by_vehicle(ctx, COMPLAINTS_PATH, make, model, model_year)
    return ComplaintsPage(total=0, complaints=[]) if body is None else parse_body(body)
