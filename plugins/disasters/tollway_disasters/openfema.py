"""OpenFEMA client: the DisasterDeclarationsSummaries v2 rows of one state, paged.

Requests go through `OPENFEMA` (a `tollway.Upstream`: the kernel's `ctx.http`, the
`openfema_api_url` setting, one mapping of upstream failures to `ToolError`s, so the
call is not charged); tests replay recorded rows through a transport.

OpenFEMA answers one row per declaration x designated area (county, parish,
borough, tribal area, "Statewide", ...); `summarize` turns rows into declarations.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tollway import ToolContext, Upstream, source_text

OPENFEMA = Upstream(
    family="disasters",
    name="openfema",
    label="OpenFEMA",
    default_base_url="https://www.fema.gov/api/open",
    description="Base URL of the OpenFEMA API (or a mirror serving the same /v2/... paths).",
    timeout_s=20.0,
)
SUMMARIES_PATH = "/v2/DisasterDeclarationsSummaries"
ENTITY = "DisasterDeclarationsSummaries"
PAGE_SIZE = 10_000  # OpenFEMA's most rows per request
MAX_PAGES = 10  # 100,000 rows: far above any state's history (the whole dataset is ~70,000 rows)
SELECT = (
    "disasterNumber,femaDeclarationString,state,declarationType,declarationDate,incidentType,"
    "declarationTitle,designatedArea,incidentBeginDate,incidentEndDate,lastRefresh"
)

# US states, DC, and the territories and freely associated states FEMA declares for.
STATE_CODES = frozenset(
    {
        "AL",
        "AK",
        "AZ",
        "AR",
        "CA",
        "CO",
        "CT",
        "DE",
        "FL",
        "GA",
        "HI",
        "ID",
        "IL",
        "IN",
        "IA",
        "KS",
        "KY",
        "LA",
        "ME",
        "MD",
        "MA",
        "MI",
        "MN",
        "MS",
        "MO",
        "MT",
        "NE",
        "NV",
        "NH",
        "NJ",
        "NM",
        "NY",
        "NC",
        "ND",
        "OH",
        "OK",
        "OR",
        "PA",
        "RI",
        "SC",
        "SD",
        "TN",
        "TX",
        "UT",
        "VT",
        "VA",
        "WA",
        "WV",
        "WI",
        "WY",
        "DC",
        "PR",
        "VI",
        "GU",
        "AS",
        "MP",
        "FM",
        "MH",
        "PW",
    }
)

_TRAILING_KIND = re.compile(r"^(?P<base>.*?)\s*\((?P<kind>[^()]*)\)$")
# A kind a caller may write as a plain last word ("Hood County" = "Hood (County)").
_KIND_WORDS = ("census area", "county", "parish", "borough", "municipio")
_ISO_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def split_area(text: str) -> tuple[str, str | None]:
    """FEMA's `designatedArea` ("Hood (County)") -> ("hood", "county"); no kind -> None."""
    text = _norm(text)
    m = _TRAILING_KIND.match(text)
    if m and m.group("base"):
        return m.group("base"), _norm(m.group("kind"))
    return text, None


def split_query(text: str) -> tuple[str, str | None]:
    """What a caller wrote: "Hood", "Hood County" or "Hood (County)" -> (base, kind or None)."""
    base, kind = split_area(text)
    if kind is None:
        for word in _KIND_WORDS:
            if base.endswith(" " + word) and len(base) > len(word) + 1:
                return base[: -len(word) - 1], word
    return base, kind


def area_matches(query: tuple[str, str | None], designated_area: str | None) -> bool:
    if not designated_area:
        return False
    base, kind = split_area(designated_area)
    return base == query[0] and (query[1] is None or kind == query[1])


def day(value: Any) -> str | None:
    """`2022-07-19T00:00:00.000Z` -> `2022-07-19`; None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    m = _ISO_DAY.match(value.strip())
    return m.group(1) if m else None


@dataclass
class Declaration:
    disaster_number: int
    fema_declaration_string: str | None
    declaration_type: str | None
    declared_on: str | None
    incident_type: str | None
    title: str | None
    incident_began_on: str | None
    incident_ended_on: str | None
    designated_areas: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Summary:
    total: int  # distinct declarations (disaster numbers)
    by_incident_type: dict[str, int]
    by_declaration_type: dict[str, int]
    declarations: list[Declaration]  # latest first
    rows: int  # OpenFEMA rows (declaration x area) read
    last_refresh: str | None  # latest lastRefresh day among the rows used


def summarize(rows: list[Mapping[str, Any]]) -> Summary:
    """Rows of OpenFEMA (already narrowed to the place) -> one entry per disaster number."""
    by_number: dict[int, Declaration] = {}
    refresh: list[str] = []
    used = 0
    for row in rows:
        number = row.get("disasterNumber")
        if isinstance(number, bool) or not isinstance(number, int):
            continue
        used += 1
        d = by_number.get(number)
        if d is None:
            d = by_number[number] = Declaration(
                disaster_number=number,
                fema_declaration_string=source_text(row.get("femaDeclarationString")),
                declaration_type=source_text(row.get("declarationType")),
                declared_on=day(row.get("declarationDate")),
                incident_type=source_text(row.get("incidentType")),
                title=source_text(row.get("declarationTitle")),
                incident_began_on=day(row.get("incidentBeginDate")),
                incident_ended_on=day(row.get("incidentEndDate")),
            )
        area = source_text(row.get("designatedArea"))
        if area and area not in d.designated_areas:
            d.designated_areas.append(area)
        r = day(row.get("lastRefresh"))
        if r:
            refresh.append(r)
    decls = sorted(by_number.values(), key=lambda d: (d.declared_on or "", d.disaster_number), reverse=True)
    incident = Counter(d.incident_type or "Unknown" for d in decls)
    kinds = Counter(d.declaration_type or "Unknown" for d in decls)

    def ordered(c: Counter[str]) -> dict[str, int]:
        return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

    return Summary(
        total=len(decls),
        by_incident_type=ordered(incident),
        by_declaration_type=ordered(kinds),
        declarations=decls,
        rows=used,
        last_refresh=max(refresh) if refresh else None,
    )


def parse_page(body: Any) -> list[Mapping[str, Any]]:
    """One decoded OpenFEMA answer -> its rows; unreadable -> provider_unavailable."""
    if not isinstance(body, Mapping):
        raise OPENFEMA.unavailable("OpenFEMA answered with an unexpected document.")
    rows = body.get(ENTITY)
    if not isinstance(rows, list):
        raise OPENFEMA.unavailable("OpenFEMA answered without declaration rows.")
    return [r for r in rows if isinstance(r, Mapping)]


def query_params(state: str, skip: int, top: int) -> dict[str, str]:
    return {
        "$filter": f"state eq '{state}'",  # state is two validated capital letters: nothing to escape
        "$select": SELECT,
        "$orderby": "declarationDate desc,disasterNumber desc",
        "$top": str(top),
        "$skip": str(skip),
    }


async def fetch_state_rows(ctx: ToolContext, state: str, *, page_size: int = PAGE_SIZE) -> list[Mapping[str, Any]]:
    """Every row OpenFEMA holds for `state`, newest declaration first, paging with $skip."""
    rows: list[Mapping[str, Any]] = []
    for page in range(MAX_PAGES):
        body = await OPENFEMA.get_json(ctx, SUMMARIES_PATH, params=query_params(state, page * page_size, page_size))
        got = parse_page(body)
        rows.extend(got)
        if len(got) < page_size:
            return rows
    raise OPENFEMA.unavailable("OpenFEMA sent more rows than expected for one state.", rows=len(rows))
