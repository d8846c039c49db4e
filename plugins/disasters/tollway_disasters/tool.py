"""The `place_disasters` tool: FEMA's declared disasters for a US state or county.

Declared once here, in the short form: `@tollway.tool` over `place_disasters` builds the
`Tool`, its input type `PlaceDisastersInput` from the function's parameters; the kernel
derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Benchmarkable, Evidence, Example, Fact, FieldError, ToolContext, tool

from . import openfema

SOURCE = "FEMA"  # Federal Emergency Management Agency (OpenFEMA)
SOURCE_KIND = "public"
AREAS_SHOWN = 20  # designated areas listed per declaration (the count is always complete)

State = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=2,
        pattern=r"^[A-Za-z]{2}$",
        description="Two-letter USPS code of a US state, DC or a territory FEMA declares for (e.g. TX, PR, GU); any case.",
        examples=["TX"],
    ),
]
County = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=80,
        pattern=r"^[A-Za-z\u00C0-\u00FF .'()-]+$",
        description=(
            "County or other designated area as FEMA names it, e.g. Hood, Hood County or Hood (County); "
            "letters, spaces, periods, apostrophes, hyphens, parentheses."
        ),
        examples=["Hood County"],
    ),
]
Limit = Annotated[int, Meta(ge=1, le=50, description="Most recent declarations to list, 1 to 50 (default 10).")]


class DisasterDeclaration(msgspec.Struct):
    disaster_number: int
    fema_declaration_string: str | None  # e.g. FM-5444-TX
    declaration_type: str | None  # DR major disaster, EM emergency, FM fire management
    declared_on: str | None  # YYYY-MM-DD
    incident_type: str | None  # FEMA's incident type, e.g. Fire, Flood, Hurricane
    title: str | None
    incident_began_on: str | None
    incident_ended_on: str | None  # null while FEMA lists the incident as ongoing
    designated_area_count: int  # areas of this place the declaration names
    designated_areas: list[str]  # the first 20 of them, as FEMA writes them


class PlaceDisastersResult(msgspec.Struct):
    state: str
    county: str | None
    total: int  # distinct declarations (disaster numbers) for the place, all years FEMA holds
    by_incident_type: dict[str, int]  # declarations per incident type, most first
    by_declaration_type: dict[str, int]  # declarations per DR / EM / FM, most first
    declarations: list[DisasterDeclaration]  # latest first, at most `limit`


class PlaceDisastersAnswer(msgspec.Struct):
    result: PlaceDisastersResult
    evidence: Evidence  # as_of: the latest `lastRefresh` day among the rows used; null when none


def check(value: PlaceDisastersInput) -> None:
    if value.state.upper() not in openfema.STATE_CODES:
        raise FieldError("state", "Expected the two-letter code of a US state, DC or a US territory")
    if value.county is not None:
        text = value.county.strip()
        if len(text) < 2 or not any(ch.isalpha() for ch in text):
            raise FieldError("county", "Expected at least 2 characters, with a letter, besides surrounding spaces")
        if not openfema.split_query(text)[0]:
            raise FieldError("county", "Expected a name before the area kind")


def _declaration(d: openfema.Declaration) -> DisasterDeclaration:
    return DisasterDeclaration(
        disaster_number=d.disaster_number,
        fema_declaration_string=d.fema_declaration_string,
        declaration_type=d.declaration_type,
        declared_on=d.declared_on,
        incident_type=d.incident_type,
        title=d.title,
        incident_began_on=d.incident_began_on,
        incident_ended_on=d.incident_ended_on,
        designated_area_count=len(d.designated_areas),
        designated_areas=d.designated_areas[:AREAS_SHOWN],
    )


def place_key(value: PlaceDisastersInput) -> str:
    """`TX`, or `TX|HOOD (COUNTY)` / `TX|HOOD` for a county (its kind only when the caller gave one)."""
    state = value.state.upper()
    if value.county is None:
        return state
    base, kind = openfema.split_query(value.county)
    return f"{state}|{base.upper()}" + (f" ({kind.upper()})" if kind else "")


def facts(value: PlaceDisastersInput, answer: PlaceDisastersAnswer) -> list[Fact]:
    """One fact per lookup keyed by state (and county); `total` (the benchmarkable
    field) at the top level, the per-type counts beside it. None depends on `limit`."""
    r = answer.result
    return [
        Fact(
            attribute="place_disasters",
            key=place_key(value),
            value={
                "total": r.total,
                "by_incident_type": r.by_incident_type,
                "by_declaration_type": r.by_declaration_type,
            },
            source=answer.evidence.source,
            as_of=answer.evidence.as_of,
            peers={"state": value.state.upper()},
            benchmarked=value.county is None,  # states are ranked among states, not among counties
        )
    ]


@tool(
    path="/v1/tools/lookup/place-disasters",
    title="Declared disasters for a place",
    summary="Disasters FEMA has declared for a US state or county: counts by type and the latest declarations.",
    description=(
        "Disasters, emergencies and fire-management assistance FEMA has declared for a US state (or one of its "
        "counties or other designated areas), from OpenFEMA's Disaster Declarations Summaries: the number of "
        "declarations (`total`), counts by incident type and by declaration type, and the latest declarations "
        "with their dates, titles and designated areas. Counts run over every year FEMA holds (since 1953). "
        "A county query counts declarations naming that county, not statewide ones."
    ),
    subcategory="place_disasters",
    price="0.005",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(title="Disasters declared for Texas", input={"state": "TX"}),
        Example(title="Disasters declared naming Hood County, Texas", input={"state": "TX", "county": "Hood County"}),
    ),
    check=check,
    facts=facts,
    benchmark=Benchmarkable(fields=("total",), peers=("state",)),
)
async def place_disasters(
    ctx: ToolContext, state: State, county: County | None = None, limit: Limit = 10
) -> PlaceDisastersAnswer:
    """The declarations FEMA holds for the state (and county), summarized."""
    state = state.upper()
    rows = await openfema.fetch_state_rows(ctx, state)
    county = county.strip() if county is not None else None
    if county is not None:
        wanted = openfema.split_query(county)
        rows = [r for r in rows if openfema.area_matches(wanted, r.get("designatedArea"))]
    summary = openfema.summarize(rows)
    return PlaceDisastersAnswer(
        result=PlaceDisastersResult(
            state=state,
            county=county,
            total=summary.total,
            by_incident_type=summary.by_incident_type,
            by_declaration_type=summary.by_declaration_type,
            declarations=[_declaration(d) for d in summary.declarations[:limit]],
        ),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=summary.last_refresh),
    )


PlaceDisastersInput = place_disasters.input_type  # what `check` and `facts` are given
