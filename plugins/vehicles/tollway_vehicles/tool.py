"""The `vehicle_recalls` tool: its input/output types, its checks and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Benchmarkable, Evidence, Example, Fact, FieldError, FieldErrors, Tool, ToolContext

from . import nhtsa
from .nhtsa import Recall

SOURCE = "NHTSA"  # National Highway Traffic Safety Administration
SOURCE_KIND = "public"

# At least one letter or digit; the leading run cannot overlap the rest, so
# matching stays linear on any length (msgspec may test the pattern first).
Make = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=40,
        pattern=r"^[ -]*[A-Za-z0-9][A-Za-z0-9 -]*$",
        description="Vehicle make, e.g. Honda: 2 to 40 letters, digits, spaces or hyphens.",
        examples=["Honda"],
    ),
]
Model = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=60,
        pattern=r"^[ .-]*[A-Za-z0-9][A-Za-z0-9 .-]*$",
        description="Vehicle model, e.g. Accord: 1 to 60 letters, digits, spaces, periods or hyphens.",
        examples=["Accord"],
    ),
]
ModelYear = Annotated[int, Meta(ge=1950, description="Model year, 1950 up to next year.", examples=[2021])]
Limit = Annotated[int, Meta(ge=1, le=50, description="Most recalls to return, 1 to 50 (default 25).")]


class VehicleRecallsInput(msgspec.Struct, forbid_unknown_fields=True):
    make: Make
    model: Model
    model_year: ModelYear
    limit: Limit = 25


class RecallResult(msgspec.Struct):
    make: str
    model: str
    model_year: int
    total: int  # NHTSA's own count for the model; may exceed len(recalls)
    recalls: list[Recall]


class RecallAnswer(msgspec.Struct):
    result: RecallResult
    evidence: Evidence  # as_of: the latest reported_on among NHTSA's recalls; null when none


def check(value: VehicleRecallsInput) -> None:
    """What msgspec constraints cannot say: the moving upper year, trimmed lengths.
    Both are checked, and both named when both fail."""
    next_year = _dt.datetime.now(_dt.UTC).year + 1
    errors = []
    if len(value.make.strip()) < 2:
        errors.append(FieldError("make", "make must have at least 2 characters besides leading and trailing spaces"))
    if value.model_year > next_year:
        errors.append(FieldError("model_year", f"model_year must be from 1950 up to {next_year}"))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise FieldErrors(errors)


async def run(value: VehicleRecallsInput, ctx: ToolContext) -> RecallAnswer:
    page = await nhtsa.fetch_recalls(ctx, value.make, value.model, value.model_year)
    # as_of covers every recall NHTSA sent, not just the first `limit`, so it
    # does not change with the caller's limit.
    dates = [r.reported_on for r in page.recalls if r.reported_on]
    return RecallAnswer(
        result=RecallResult(
            make=value.make.strip(),
            model=value.model.strip(),
            model_year=value.model_year,
            total=page.total,
            recalls=page.recalls[: value.limit],
        ),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=max(dates) if dates else None),
    )


def facts(value: VehicleRecallsInput, answer: RecallAnswer) -> list[Fact]:
    """One fact per lookup: the model's recall count (the benchmarkable field
    `total`), keyed `MAKE|MODEL|YEAR` in capitals. It is NHTSA's own count, so
    the fact does not depend on the caller's `limit`."""
    key = "|".join((" ".join(value.make.split()).upper(), " ".join(value.model.split()).upper(), str(value.model_year)))
    return [
        Fact(
            attribute="vehicle_recalls",
            key=key,
            value={"total": answer.result.total},
            source=answer.evidence.source,
            as_of=answer.evidence.as_of,
            peers={"make": " ".join(value.make.split()).upper(), "model_year": value.model_year},
        )
    ]


VEHICLE_RECALLS = Tool(
    name="vehicle_recalls",
    path="/v1/tools/lookup/vehicle-recalls",
    title="Vehicle recalls",
    summary="Safety recalls NHTSA lists for a make, model and model year: component, consequence, remedy, park-it warnings.",
    description=(
        "Safety recalls NHTSA lists for a make, model and model year of vehicle sold in the United States: "
        "campaign number, report date, component, summary, consequence, remedy, and whether owners are told "
        "to park it, park it outside, or can get an over-the-air fix. `total` is NHTSA's own count and may "
        "exceed the recalls returned. It does not say whether a given vehicle was repaired."
    ),
    category="data",
    subcategory="vehicle_recalls",
    input_type=VehicleRecallsInput,
    output_type=RecallAnswer,
    run=run,
    price="0.005",
    family="vehicles",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(
            title="Recalls for a 2021 Honda Accord",
            input={"make": "Honda", "model": "Accord", "model_year": 2021},
        ),
    ),
    check=check,
    facts=facts,
    benchmark=Benchmarkable(fields=("total",), peers=("make", "model_year")),
)
