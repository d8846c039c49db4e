"""NHTSA recalls client: one `recallsByVehicle` request and its parsing.

Requests go through `NHTSA` (a `tollway.Upstream`: the kernel's `ctx.http`, the
`nhtsa_api_url` setting, one mapping of upstream failures to `ToolError`s, so the
call is not charged); tests replay recorded answers through a transport. The
complaints client (`complaints.py`) shares the request and the field readers.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from tollway import ToolContext, Upstream, source_int, source_text

NHTSA = Upstream(
    family="vehicles",
    name="nhtsa",
    label="NHTSA",
    default_base_url="https://api.nhtsa.gov",
    description="Base URL of the NHTSA recalls API (or a mirror / local replay server serving the same paths).",
)
RECALLS_PATH = "/recalls/recallsByVehicle"

_DMY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
# Legacy webapi.nhtsa.gov: "/Date(977115600000-0500)/" (ms since the epoch, local offset).
_MS_DATE = re.compile(r"^/?Date\((-?\d+)(?:([+-])(\d{2})(\d{2}))?\)/?$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$")
_TRUE = {"true", "yes", "y", "1"}


class Recall(msgspec.Struct):
    """A Vehicle recall; every string is null when NHTSA gives none."""

    campaign_number: str | None
    reported_on: str | None  # YYYY-MM-DD
    component: str | None
    summary: str | None
    consequence: str | None
    remedy: str | None
    notes: str | None
    manufacturer: str | None
    park_it: bool  # owners told not to drive the vehicle
    park_outside: bool
    over_the_air_fix: bool


@dataclass(frozen=True)
class RecallsPage:
    """What NHTSA said: its own `Count` and every result it sent, in its order."""

    total: int
    recalls: list[Recall]


def flag(value: Any) -> bool:
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
    text = source_text(value)
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


# Our recall field -> NHTSA's: the text fields, then the owner flags (false when absent).
_TEXTS = {"campaign_number": "NHTSACampaignNumber", "component": "Component", "summary": "Summary",
          "remedy": "Remedy", "notes": "Notes", "manufacturer": "Manufacturer"}  # fmt: skip
_FLAGS = {"park_it": "parkIt", "park_outside": "parkOutSide", "over_the_air_fix": "overTheAirUpdate"}


def parse_recall(item: Mapping[str, Any]) -> Recall:
    """One NHTSA result (current or legacy shape) -> a Vehicle recall (docs/vehicles.md)."""
    consequence = item.get("Consequence")
    if source_text(consequence) is None:
        consequence = item.get("Conequence")  # sic: the legacy API's spelling
    return Recall(
        reported_on=parse_date(item.get("ReportReceivedDate")),
        consequence=source_text(consequence),
        **{ours: source_text(item.get(theirs)) for ours, theirs in _TEXTS.items()},
        **{ours: flag(item.get(theirs)) for ours, theirs in _FLAGS.items()},
    )


def results_of(body: Mapping[str, Any]) -> list[Any] | None:
    """The result list of either shape (`results` now, `Results` before 2020)."""
    for key in ("results", "Results"):
        value = body.get(key)
        if isinstance(value, list):
            return value
    return None


def count_of(body: Mapping[str, Any], keys: Sequence[str] = ("Count", "count")) -> int | None:
    """The source's own count, from the first of `keys` present."""
    value = source_int(next((body[k] for k in keys if k in body), None))
    return value if value is not None and value >= 0 else None


def parse_results(body: Any, count_keys: Sequence[str] = ("Count", "count")) -> tuple[int, list[Mapping[str, Any]]]:
    """A decoded answer of either API (recalls, complaints) -> (total, result objects);
    anything unreadable -> provider_unavailable. `total` is NHTSA's own count
    (docs/vehicles.md), which may exceed the results sent, and never fewer than them."""
    if not isinstance(body, Mapping):
        raise NHTSA.unavailable("NHTSA answered with an unexpected document.")
    results = results_of(body)
    if results is None:
        raise NHTSA.unavailable("NHTSA answered without a result list.")
    items = [item for item in results if isinstance(item, Mapping)]
    return max(count_of(body, count_keys) or 0, len(items)), items


def parse_body(body: Any) -> RecallsPage:
    total, items = parse_results(body)
    return RecallsPage(total=total, recalls=[parse_recall(item) for item in items])


def query_value(text: str) -> str:
    """What NHTSA is sent for make/model: trimmed, single-spaced, lower-case.

    NHTSA matches make and model without regard to case; one canonical form
    means one upstream URL per vehicle (and one recorded replay per vehicle).
    """
    return " ".join(text.split()).lower()


async def fetch_by_vehicle(ctx: ToolContext, path: str, make: str, model: str, model_year: int) -> Any | None:
    """GET {base}{path}?make=..&model=..&modelYear=..: the JSON answer, or None when
    NHTSA answers 400/404 with a body that explicitly says "no results"."""
    params = {"make": query_value(make), "model": query_value(model), "modelYear": str(model_year)}
    reply = await NHTSA.send(ctx, path, params=params)
    body = reply.body
    if reply.status in (400, 404) and isinstance(body, Mapping) and count_of(body) == 0 and results_of(body) == []:
        return None
    return NHTSA.json_of(reply)


async def fetch_recalls(ctx: ToolContext, make: str, model: str, model_year: int) -> RecallsPage:
    """The recalls NHTSA lists for one model year of a vehicle."""
    body = await fetch_by_vehicle(ctx, RECALLS_PATH, make, model, model_year)
    return RecallsPage(total=0, recalls=[]) if body is None else parse_body(body)
