"""The `vehicle_identification` tool: decode a VIN with NHTSA's vPIC API.

The VIN is checked (17 characters, no I/O/Q, ISO 3779 check digit) before any
payment; the answer is what vPIC decodes, with null for every empty value.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Fact, FieldError, Tool, ToolContext

from . import vin as vpic
from .tool import SOURCE, SOURCE_KIND

Vin = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=40,
        description=(
            "Vehicle identification number: 17 letters and digits (never I, O or Q) whose 9th character is "
            "the ISO 3779 check digit; any case, surrounding spaces ignored."
        ),
        examples=["1HGCM82633A004352"],
    ),
]


class VehicleIdentificationInput(msgspec.Struct, forbid_unknown_fields=True):
    vin: Vin


class VehicleIdentity(msgspec.Struct):
    """What vPIC decodes from the VIN; every field is null when vPIC gives no value."""

    vin: str  # the VIN asked about, in capitals
    make: str | None
    model: str | None
    model_year: int | None
    manufacturer: str | None
    series: str | None
    trim: str | None
    body_class: str | None
    vehicle_type: str | None
    doors: int | None
    drive_type: str | None
    fuel_type: str | None  # vPIC's primary fuel type
    engine_cylinders: int | None
    displacement_l: str | None  # litres, as vPIC writes them (e.g. "3.0")
    gvwr: str | None  # gross vehicle weight rating class, as vPIC writes it
    plant_city: str | None
    plant_state: str | None
    plant_country: str | None
    decoded_clean: bool  # vPIC's ErrorCode is exactly "0"
    decode_notes: str | None  # vPIC's ErrorText (why a decode is partial); null when clean


class IdentificationAnswer(msgspec.Struct):
    result: VehicleIdentity
    evidence: Evidence  # as_of is always null: vPIC states no date for its decoding data


def normalized_vin(text: str) -> str:
    return text.strip().upper()


def check(value: VehicleIdentificationInput) -> None:
    problem = vpic.validate_vin(value.vin)
    if problem is not None:
        raise FieldError("vin", problem)


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else None


async def run(value: VehicleIdentificationInput, ctx: ToolContext) -> IdentificationAnswer:
    number = normalized_vin(value.vin)
    decoded = await vpic.fetch_vin(ctx, number)
    v = decoded.values
    clean = decoded.error_codes == ["0"]
    return IdentificationAnswer(
        result=VehicleIdentity(
            vin=number,
            make=v["make"],
            model=v["model"],
            model_year=_int(v["model_year"]),
            manufacturer=v["manufacturer"],
            series=v["series"],
            trim=v["trim"],
            body_class=v["body_class"],
            vehicle_type=v["vehicle_type"],
            doors=_int(v["doors"]),
            drive_type=v["drive_type"],
            fuel_type=v["fuel_type"],
            engine_cylinders=_int(v["engine_cylinders"]),
            displacement_l=v["displacement_l"],
            gvwr=v["gvwr"],
            plant_city=v["plant_city"],
            plant_state=v["plant_state"],
            plant_country=v["plant_country"],
            decoded_clean=clean,
            decode_notes=None if clean else decoded.error_text,
        ),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=None),
    )


def facts(value: VehicleIdentificationInput, answer: IdentificationAnswer) -> list[Fact]:
    """One fact keyed by the VIN in capitals; the value is every decoded field
    (the VIN itself is the key, so it is left out of the value)."""
    decoded = msgspec.to_builtins(answer.result)
    decoded.pop("vin", None)
    return [
        Fact(
            attribute="vehicle_identification",
            key=answer.result.vin,
            value=decoded,
            source=answer.evidence.source,
            as_of=answer.evidence.as_of,
        )
    ]


VEHICLE_IDENTIFICATION = Tool(
    name="vehicle_identification",
    path="/v1/tools/lookup/vehicle-identification",
    title="Vehicle identification (VIN decode)",
    summary="Decodes a 17-character VIN with NHTSA's vPIC catalogue: make, model, year, trim, body, engine, plant.",
    description=(
        "Decodes a 17-character vehicle identification number with NHTSA's vPIC catalogue: make, model, model "
        "year, manufacturer, series, trim, body class, vehicle type, doors, drive, fuel, engine, weight class "
        "and assembly plant. The VIN's check digit is verified before payment. vPIC decodes what manufacturers "
        "filed for the VIN pattern; it says nothing about a particular vehicle's history or owner."
    ),
    category="data",
    subcategory="vehicle_identification",
    input_type=VehicleIdentificationInput,
    output_type=IdentificationAnswer,
    run=run,
    price="0.005",
    family="vehicles",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(Example(title="Decode a 2003 Honda Accord's VIN", input={"vin": "1HGCM82633A004352"}),),
    check=check,
    facts=facts,
)
