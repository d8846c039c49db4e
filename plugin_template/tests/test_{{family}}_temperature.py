"""Tests of `{{family}}_temperature`, the tool declared with `@tollway.tool`: what the
signature made of it, its conversions, its refusals and one call paid from credits."""
from __future__ import annotations

import msgspec
import pytest

from tollway import FieldError
from tollway.testing import credits_session, http_client
from tollway_{{family}}.temperature import check, {{family}}_temperature as TEMPERATURE


def value(**fields: object):
    return msgspec.json.decode(msgspec.json.encode(fields), type=TEMPERATURE.input_type)


def test_the_signature_made_the_input_and_the_docstring_the_description() -> None:
    assert TEMPERATURE.name == "{{family}}_temperature" and TEMPERATURE.family == "{{family}}"
    schema = TEMPERATURE.input_schema()["$defs"][TEMPERATURE.input_type.__name__]
    assert schema["required"] == ["value"]
    assert schema["properties"]["unit"] == {"enum": ["celsius", "fahrenheit", "kelvin"], "default": "celsius"}
    assert TEMPERATURE.short_description.startswith("Converts a temperature")
    assert TEMPERATURE.fixed_price == 1_000  # micro-USDC: 0.001 USDC


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"value": 100}, (100.0, 212.0, 373.15)),
        ({"value": 32, "unit": "fahrenheit"}, (0.0, 32.0, 273.15)),
        ({"value": 0, "unit": "kelvin"}, (-273.15, -459.67, 0.0)),
    ],
)
async def test_converts(fields: dict, expected: tuple) -> None:
    answer = await TEMPERATURE.run(value(**fields), None)
    assert (answer.result.celsius, answer.result.fahrenheit, answer.result.kelvin) == expected


def test_refuses_colder_than_absolute_zero() -> None:
    with pytest.raises(FieldError) as err:
        check(value(value=-1, unit="kelvin"))
    assert err.value.field == "value" and err.value.code == "invalid_input"
    with pytest.raises(msgspec.ValidationError, match="unit"):
        value(value=1, unit="rankine")


async def test_paid_from_credits_through_the_kernel(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_{{family}}"})
    async with http_client(kernel) as client:
        _agent, auth = await credits_session(client, "1")
        paid = await client.post(TEMPERATURE.path, json={"value": 451, "unit": "fahrenheit"}, headers=auth)
    assert paid.status_code == 200, paid.text
    data = paid.json()["data"]
    assert data["tool"] == "{{family}}_temperature"
    assert data["result"] == {"celsius": 232.78, "fahrenheit": 451.0, "kelvin": 505.93}
