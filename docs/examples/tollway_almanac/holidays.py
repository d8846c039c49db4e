"""`almanac_holidays`: a full `Tool` declaration that asks a public HTTP registry
(Nager.Date's public holidays API) through `tollway.Upstream`."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Tool, ToolContext, Upstream, source_text

NAGER = Upstream(
    family="almanac",
    name="nager",
    label="Nager.Date",
    default_base_url="https://date.nager.at/api/v3",
    description="Base URL of the Nager.Date API (or a mirror, or a local replay in tests).",
)


class HolidaysInput(msgspec.Struct, forbid_unknown_fields=True):
    country: Annotated[str, Meta(pattern="^[A-Z]{2}$", description="ISO 3166-1 alpha-2 code, e.g. FR.")]
    year: Annotated[int, Meta(ge=1975, le=2075)]


class Holiday(msgspec.Struct):
    date: str
    name: str  # in English
    local_name: str | None


class HolidaysAnswer(msgspec.Struct):
    result: list[Holiday]
    evidence: Evidence


def holidays_of(body: Any) -> list[Holiday]:
    if not isinstance(body, list):
        raise NAGER.unavailable("Nager.Date answered without a list of holidays.")
    return [
        Holiday(
            date=str(source_text(h.get("date"))),
            name=str(source_text(h.get("name"))),
            local_name=source_text(h.get("localName")),
        )
        for h in body
        if isinstance(h, dict) and source_text(h.get("date")) and source_text(h.get("name"))
    ]


async def run(value: HolidaysInput, ctx: ToolContext) -> HolidaysAnswer:
    body = await NAGER.get_json(ctx, f"/PublicHolidays/{value.year}/{value.country}")
    return HolidaysAnswer(result=holidays_of(body), evidence=Evidence.now("Nager.Date", as_of=None))


HOLIDAYS = Tool(
    name="almanac_holidays",
    path="/v1/tools/almanac/holidays",
    title="Public holidays",
    description="A country's public holidays in a year, as Nager.Date lists them.",
    category="data",
    input_type=HolidaysInput,
    output_type=HolidaysAnswer,
    run=run,
    price="0.002",
    family="almanac",
    examples=(Example("France, 2026", {"country": "FR", "year": 2026}),),
)
