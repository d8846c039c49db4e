"""VIN checks (ISO 3779 / 49 CFR 565) done before payment, and the vPIC client.

`validate_vin` says why a VIN is refused; `fetch_vin` asks NHTSA's vPIC API
(`DecodeVinValues`) through `VPIC` (a `tollway.Upstream`: the kernel's `ctx.http`, the
`vpic_api_url` setting, one mapping of upstream failures to `ToolError`s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tollway import ToolContext, Upstream, source_text

VPIC = Upstream(
    family="vehicles",
    name="vpic",
    label="vPIC",
    default_base_url="https://vpic.nhtsa.dot.gov/api",
    description="Base URL of NHTSA's vPIC API (VIN decoding), or a mirror serving the same paths.",
)
DECODE_PATH = "/vehicles/DecodeVinValues/"

# ISO 3779 transliteration of letters to the values the check digit uses
# (I, O and Q never appear in a VIN).
_LETTER_VALUES = {
    **dict(zip("ABCDEFGH", range(1, 9))),
    **dict(zip("JKLMN", range(1, 6))),
    "P": 7,
    "R": 9,
    **dict(zip("STUVWXYZ", range(2, 10))),
}
_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)
VIN_LENGTH = 17


def _value(ch: str) -> int:
    return int(ch) if ch.isdigit() else _LETTER_VALUES[ch]


def check_digit(vin: str) -> str:
    """The check digit position 9 must hold: weighted sum mod 11, 10 written `X`."""
    total = sum(_value(ch) * w for ch, w in zip(vin, _WEIGHTS))
    rest = total % 11
    return "X" if rest == 10 else str(rest)


def validate_vin(raw: str) -> str | None:
    """Why `raw` (trimmed, any case) is not a valid VIN, or None when it is."""
    vin = raw.strip().upper()
    if len(vin) != VIN_LENGTH:
        return f"Expected exactly {VIN_LENGTH} characters, got {len(vin)}"
    bad = sorted({ch for ch in vin if ch in "IOQ"})
    if bad:
        return f"A VIN never contains the letters I, O or Q (found {', '.join(bad)})"
    if not all(ch.isdigit() or ch in _LETTER_VALUES for ch in vin):
        return "Expected only the digits 0-9 and the letters A-Z except I, O and Q"
    expected = check_digit(vin)
    if vin[8] != expected:
        return f"Check digit (position 9) is {vin[8]!r} but the other characters require {expected!r}"
    return None


# vPIC variable -> our field. vPIC answers every variable as a string, "" when it
# has no value for this VIN.
FIELDS: tuple[tuple[str, str], ...] = (
    ("make", "Make"),
    ("model", "Model"),
    ("model_year", "ModelYear"),
    ("manufacturer", "Manufacturer"),
    ("series", "Series"),
    ("trim", "Trim"),
    ("body_class", "BodyClass"),
    ("vehicle_type", "VehicleType"),
    ("doors", "Doors"),
    ("drive_type", "DriveType"),
    ("fuel_type", "FuelTypePrimary"),
    ("engine_cylinders", "EngineCylinders"),
    ("displacement_l", "DisplacementL"),
    ("gvwr", "GVWR"),
    ("plant_city", "PlantCity"),
    ("plant_state", "PlantState"),
    ("plant_country", "PlantCountry"),
)


@dataclass(frozen=True)
class DecodedVin:
    values: dict[str, str | None]  # our field -> vPIC's text or None
    error_codes: list[str]  # vPIC's ErrorCode split on commas ("0" = decoded clean)
    error_text: str | None


def _text(value: Any) -> str | None:
    text = source_text(value)
    # vPIC writes "Not Applicable" for variables that do not apply to this VIN.
    return None if text == "Not Applicable" else text


def parse_decode(body: Any) -> DecodedVin:
    """A decoded DecodeVinValues 200 answer -> DecodedVin; unreadable -> provider_unavailable."""
    if not isinstance(body, Mapping):
        raise VPIC.unavailable("vPIC answered with an unexpected document.")
    results = body.get("Results")
    if not isinstance(results, list) or not results or not isinstance(results[0], Mapping):
        raise VPIC.unavailable("vPIC answered without a decoded vehicle.")
    row = results[0]
    values = {ours: _text(row.get(theirs)) for ours, theirs in FIELDS}
    codes_text = _text(row.get("ErrorCode")) or ""
    codes = [c.strip() for c in codes_text.split(",") if c.strip()]
    return DecodedVin(values=values, error_codes=codes, error_text=_text(row.get("ErrorText")))


async def fetch_vin(ctx: ToolContext, vin: str) -> DecodedVin:
    """GET {base}/vehicles/DecodeVinValues/{VIN}?format=json and parse it."""
    return parse_decode(await VPIC.get_json(ctx, DECODE_PATH + vin, params={"format": "json"}))
