"""The `vehicle_complaints` tool: owner complaints NHTSA holds for a make, model
and model year, with counts of crashes, fires, injuries and deaths.

Declared once here; the kernel derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Benchmarkable, Evidence, Example, Fact, Tool, ToolContext

from . import complaints as nhtsa_complaints
from .complaints import Complaint
from .tool import SOURCE, SOURCE_KIND, Make, Model, ModelYear
from .tool import check as _check_vehicle

ComplaintsLimit = Annotated[
    int, Meta(ge=1, le=50, description="Most recent complaints to return, 1 to 50 (default 10).")
]


class VehicleComplaintsInput(msgspec.Struct, forbid_unknown_fields=True):
    make: Make
    model: Model
    model_year: ModelYear
    limit: ComplaintsLimit = 10


class ComplaintsResult(msgspec.Struct):
    make: str
    model: str
    model_year: int
    total: int  # NHTSA's own count of complaints for the vehicle
    complaints_counted: int  # complaints NHTSA sent, over which the four counts below run
    crashes: int  # of those, complaints reporting a crash
    fires: int  # of those, complaints reporting a fire
    injuries: int  # sum of the injuries those complaints report
    deaths: int  # sum of the deaths those complaints report
    complaints: list[Complaint]  # most recent first, at most `limit`


class ComplaintsAnswer(msgspec.Struct):
    result: ComplaintsResult
    evidence: Evidence  # as_of: the latest filing date among the complaints NHTSA sent


def check(value: VehicleComplaintsInput) -> None:
    """The same make / model-year rules as `vehicle_recalls`."""
    _check_vehicle(value)  # type: ignore[arg-type]  # reads only make and model_year


async def run(value: VehicleComplaintsInput, ctx: ToolContext) -> ComplaintsAnswer:
    page = await nhtsa_complaints.fetch_complaints(ctx, value.make, value.model, value.model_year)
    sent = page.complaints
    dates = [c.filed_on for c in sent if c.filed_on]
    recent = nhtsa_complaints.most_recent_first(sent)[: value.limit]
    return ComplaintsAnswer(
        result=ComplaintsResult(
            make=value.make.strip(),
            model=value.model.strip(),
            model_year=value.model_year,
            total=page.total,
            complaints_counted=len(sent),
            crashes=sum(1 for c in sent if c.crash),
            fires=sum(1 for c in sent if c.fire),
            injuries=sum(c.injuries for c in sent),
            deaths=sum(c.deaths for c in sent),
            complaints=recent,
        ),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=max(dates) if dates else None),
    )


def vehicle_key(make: str, model: str, model_year: int) -> str:
    return "|".join((" ".join(make.split()).upper(), " ".join(model.split()).upper(), str(model_year)))


def facts(value: VehicleComplaintsInput, answer: ComplaintsAnswer) -> list[Fact]:
    """One fact per lookup keyed `MAKE|MODEL|YEAR`; the benchmarkable numeric
    fields (`total`, `crashes`, `fires`, `injuries`, `deaths`) at the top level.
    None depends on the caller's `limit`."""
    r = answer.result
    return [
        Fact(
            attribute="vehicle_complaints",
            key=vehicle_key(value.make, value.model, value.model_year),
            value={
                "total": r.total,
                "crashes": r.crashes,
                "fires": r.fires,
                "injuries": r.injuries,
                "deaths": r.deaths,
                "complaints_counted": r.complaints_counted,
            },
            source=answer.evidence.source,
            as_of=answer.evidence.as_of,
            peers={"make": " ".join(value.make.split()).upper(), "model_year": value.model_year},
        )
    ]


VEHICLE_COMPLAINTS = Tool(
    name="vehicle_complaints",
    path="/v1/tools/lookup/vehicle-complaints",
    title="Vehicle complaints",
    summary="Owner complaints NHTSA holds for a make, model and model year: crash, fire, injury and death counts and the latest complaints.",
    description=(
        "Owner complaints NHTSA holds for a make, model and model year of vehicle sold in the United States: "
        "NHTSA's own complaint count (`total`), the number of complaints reporting a crash or a fire and the "
        "injuries and deaths they report (counted over every complaint NHTSA sent, `complaints_counted`), and "
        "the most recent complaints with their ODI number, dates, components and summary. Complaints are "
        "owners' unverified reports, not findings of a defect."
    ),
    category="data",
    subcategory="vehicle_complaints",
    input_type=VehicleComplaintsInput,
    output_type=ComplaintsAnswer,
    run=run,
    price="0.005",
    family="vehicles",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(
            title="Complaints about the 2021 Honda Accord",
            input={"make": "Honda", "model": "Accord", "model_year": 2021},
        ),
    ),
    check=check,
    facts=facts,
    benchmark=Benchmarkable(fields=("total", "crashes", "fires", "injuries", "deaths"), peers=("make", "model_year")),
)
