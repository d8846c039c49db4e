"""`almanac_day_length`: a tool in the short form, one typed async function."""

from __future__ import annotations

import math
from typing import Annotated

import msgspec
from msgspec import Meta

import tollway


class DayLength(msgspec.Struct):
    hours: float  # from sunrise to sunset, 0 in polar night, 24 in polar day
    polar: bool  # the sun does not rise, or does not set


@tollway.tool(path="/v1/tools/almanac/day-length", price="0.001", examples={"latitude": 48.85, "day_of_year": 172})
async def almanac_day_length(
    latitude: Annotated[float, Meta(ge=-90, le=90, description="Degrees north (negative south).")],
    day_of_year: Annotated[int, Meta(ge=1, le=366)] = 172,
) -> DayLength:
    """How long the sun is up at a latitude on a day of the year, from the solar
    declination (accurate to a few minutes; no refraction)."""
    declination = math.radians(23.44) * math.sin(2 * math.pi * (284 + day_of_year) / 365)
    cos_hour_angle = -math.tan(math.radians(latitude)) * math.tan(declination)
    if abs(cos_hour_angle) >= 1:  # the sun stays down (> 1) or up (< -1) all day
        return DayLength(hours=0.0 if cos_hour_angle > 0 else 24.0, polar=True)
    hours = 2 * math.degrees(math.acos(cos_hour_angle)) / 15
    return DayLength(hours=round(hours, 2), polar=False)
