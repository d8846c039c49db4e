"""The `{{family}}_temperature` tool, declared in the short form: `@tollway.tool` over one
typed async function.

The parameters become the input (their defaults and `Annotated` constraints included),
the docstring the description agents read, the function's name the tool's name and this
package the family; the answer is `{"result": <what the function returns>}`. Add a
`ctx: tollway.ToolContext` parameter to reach this family's settings (`ctx.settings`)
and the shared HTTP client (`ctx.http`).
"""
from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

import tollway
from tollway import FieldError

ABSOLUTE_ZERO = {"celsius": -273.15, "fahrenheit": -459.67, "kelvin": 0.0}

Degrees = Annotated[float, Meta(ge=-1_000, le=1_000_000, description="The temperature to convert.")]
Unit = Literal["celsius", "fahrenheit", "kelvin"]


class {{Family}}Temperature(msgspec.Struct):
    celsius: float
    fahrenheit: float
    kelvin: float


def check(value) -> None:
    """What the constraints cannot say: nothing is colder than absolute zero."""
    if value.value < ABSOLUTE_ZERO[value.unit]:
        raise FieldError("value", f"Expected at least {ABSOLUTE_ZERO[value.unit]} (absolute zero in {value.unit})", code="invalid_input")


@tollway.tool(
    path="/v1/tools/{{family}}/temperature",
    price="0.001",  # USDC per call
    examples={"value": 21.5, "unit": "celsius"},
    check=check,
)
async def {{family}}_temperature(value: Degrees, unit: Unit = "celsius") -> {{Family}}Temperature:
    """Converts a temperature to Celsius, Fahrenheit and Kelvin, rounded to 2 decimals.
    Refuses anything colder than absolute zero."""
    celsius = {"celsius": value, "fahrenheit": (value - 32) * 5 / 9, "kelvin": value - 273.15}[unit]
    return {{Family}}Temperature(
        celsius=round(celsius, 2), fahrenheit=round(celsius * 9 / 5 + 32, 2), kelvin=round(celsius + 273.15, 2)
    )
