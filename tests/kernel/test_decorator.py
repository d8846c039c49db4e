"""`@tollway.tool`: the input type comes from the signature (defaults, constraints),
the description from the docstring, the name from the function, the family from the
package; a bad body is refused naming its fields; a paid call goes through the kernel."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import Annotated, Literal

import msgspec
import pytest
from eth_account import Account

import tollway
from tollway import Example, Tool, ToolContext, hookimpl
from tollway.testing import OPERATOR, credits_session, http_client, pay_402

City = Annotated[str, msgspec.Meta(min_length=2, max_length=60, description="The city's name.")]
Days = Annotated[int, msgspec.Meta(ge=1, le=16, description="How many days, 1 to 16.")]


class DayForecast(msgspec.Struct):
    day: int
    high_c: float


class WeatherReport(msgspec.Struct):
    city: str
    days: list[DayForecast]
    units: str


@tollway.tool(path="/v1/tools/weather/forecast", price="0.002", family="weather", examples={"city": "Paris"})
async def weather_forecast(
    ctx: ToolContext, city: City, days: Days = 3, units: Literal["metric", "imperial"] = "metric"
) -> WeatherReport:
    """Daily highs for a city, for up to 16 days. A made-up forecast: the same every time."""
    assert isinstance(ctx, ToolContext)
    return WeatherReport(city=city, days=[DayForecast(day=d, high_c=20.0 + d) for d in range(1, days + 1)], units=units)


def test_input_type_comes_from_the_signature_with_defaults_and_constraints() -> None:
    assert isinstance(weather_forecast, Tool)
    schema = weather_forecast.input_schema()["$defs"]["WeatherForecastInput"]
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["city"] == {
        "type": "string",
        "minLength": 2,
        "maxLength": 60,
        "description": "The city's name.",
    }
    assert schema["properties"]["days"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 16,
        "default": 3,
        "description": "How many days, 1 to 16.",
    }
    assert schema["properties"]["units"] == {"enum": ["imperial", "metric"], "default": "metric"}
    value = msgspec.json.decode(b'{"city": "Oslo"}', type=weather_forecast.input_type)
    assert (value.city, value.days, value.units) == ("Oslo", 3, "metric")
    with pytest.raises(msgspec.ValidationError, match="days"):
        msgspec.json.decode(b'{"city": "Oslo", "days": 17}', type=weather_forecast.input_type)
    with pytest.raises(msgspec.ValidationError, match="unknown field `country`"):
        msgspec.json.decode(b'{"city": "Oslo", "country": "NO"}', type=weather_forecast.input_type)


def test_name_description_title_price_and_answer_type() -> None:
    t = weather_forecast
    assert t.name == "weather_forecast" and t.title == "Weather forecast" and t.family == "weather"
    assert t.description == "Daily highs for a city, for up to 16 days. A made-up forecast: the same every time."
    assert t.short_description == "Daily highs for a city, for up to 16 days."
    assert t.fixed_price == 2_000 and t.category == "data"
    assert t.examples == (Example("Example", {"city": "Paris"}),)
    answer = weather_forecast.output_schema()["$defs"]["WeatherForecastAnswer"]
    assert answer["required"] == ["result"] and answer["properties"]["result"] == {"$ref": "#/$defs/WeatherReport"}
    assert t.run.__wrapped__.__name__ == "weather_forecast" and t.run.__module__ == __name__


async def test_run_passes_the_fields_and_the_context_and_wraps_the_result() -> None:
    value = msgspec.json.decode(b'{"city": "Oslo", "days": 2}', type=weather_forecast.input_type)
    ctx = ToolContext(request_id="req_1", agent_id=None, http=None, settings={})  # type: ignore[arg-type]
    out = await weather_forecast.run(value, ctx)
    assert msgspec.to_builtins(out) == {
        "result": {"city": "Oslo", "days": [{"day": 1, "high_c": 21.0}, {"day": 2, "high_c": 22.0}], "units": "metric"}
    }


def _decorate(fn, module: str = "tollway_air_quality.tool", **kw) -> Tool:
    fn.__module__ = module
    return tollway.tool(path="/v1/tools/x/y", price=1_000, **kw)(fn)


def test_family_comes_from_the_package_and_the_context_is_optional() -> None:
    async def add_up(a: int, b: Annotated[int, msgspec.Meta(examples=[2])] = 1) -> int:
        """Adds two whole numbers."""
        return a + b

    with pytest.raises(TypeError, match="pass family=") as err:
        tollway.tool(path="/v1/tools/x/y", price=1)(add_up)
    assert "add_up" in str(err.value)
    t = _decorate(add_up)
    assert t.family == "air_quality"
    assert t.examples == ()  # `a` has neither a default nor a Meta example: no example is made up
    out = asyncio.run(t.run(t.input_type(a=2, b=5), None))  # type: ignore[call-arg]
    assert msgspec.to_builtins(out) == {"result": 7}


def test_an_example_is_made_from_defaults_and_meta_examples_when_every_field_has_one() -> None:
    async def scale(
        ctx, x: Annotated[float, msgspec.Meta(examples=[2.5])], tags: list[str] = ["a", "b"], factor: int = 10
    ) -> float:
        """Scales a number."""
        return x * factor

    t = _decorate(scale)
    assert t.examples == (Example("Example", {"x": 2.5, "tags": ["a", "b"], "factor": 10}),)
    first, second = t.input_type(x=1.0), t.input_type(x=1.0)  # type: ignore[call-arg]
    first.tags.append("c")
    assert second.tags == ["a", "b"]  # a mutable default is copied, never shared


class LookupEvidence(msgspec.Struct):
    source: str


class LookupAnswer(msgspec.Struct):
    result: dict
    evidence: LookupEvidence


def test_a_returned_struct_with_a_result_field_is_the_whole_answer() -> None:
    async def lookup(ctx, key: str) -> LookupAnswer:
        """Looks a key up."""
        return {"result": {"key": key}, "evidence": {"source": "here"}}  # type: ignore[return-value]

    t = _decorate(lookup, examples=[Example("one key", {"key": "k"}), {"key": "j"}])
    assert t.output_type is LookupAnswer
    assert [e.title for e in t.examples] == ["one key", "Example 2"]
    out = asyncio.run(t.run(t.input_type(key="k"), None))  # type: ignore[call-arg]
    assert out == LookupAnswer(result={"key": "k"}, evidence=LookupEvidence(source="here"))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(x: int) -> int:\n    'Doc.'\n    return x", "must be `async def`"),
        ("async def f(x) -> int:\n    'Doc.'\n    return x", "parameter 'x' needs a type annotation"),
        ("async def f(x: int):\n    'Doc.'\n    return x", "annotate what it returns"),
        ("async def f(x: int) -> int:\n    return x", "give it a docstring"),
        ("async def f(*xs: int) -> int:\n    'Doc.'\n    return 0", "parameter 'xs' must be a plain named parameter"),
        ("async def f(x: Missing) -> int:\n    'Doc.'\n    return 0", "cannot resolve its annotations"),
    ],
)
def test_declarations_it_cannot_turn_into_a_tool_are_refused_by_name(source: str, message: str) -> None:
    namespace: dict = {}
    exec(source, namespace)
    with pytest.raises(TypeError, match=message) as err:
        _decorate(namespace["f"])
    assert "@tollway.tool f" in str(err.value)


def test_an_example_that_does_not_validate_and_signature_fields_as_options_are_refused() -> None:
    async def f(x: Annotated[int, msgspec.Meta(ge=1)]) -> int:
        """Doc."""
        return x

    with pytest.raises(ValueError, match=r"example 'Example' does not validate: Expected `int` >= 1 - at `\$.x`"):
        _decorate(f, examples={"x": 0})
    with pytest.raises(TypeError, match="takes no input_type"):
        tollway.tool(path="/v1/tools/x/y", price=1, input_type=dict)


def test_its_typed_options_are_the_tool_fields_the_function_does_not_give() -> None:
    """`ToolOptions`, how a type checker reads `**options`, names every other `Tool` field, so
    a field added to `Tool` is typed for the decorator too."""
    from tollway._core.plugin_api.decorator import _FORBIDDEN, ToolOptions

    own = set(inspect.signature(tollway.tool).parameters) - {"options"}
    fields = {f.name for f in dataclasses.fields(Tool)} | {"job", "history", "admission"}  # and the InitVars
    assert set(ToolOptions.__annotations__) == fields - own - set(_FORBIDDEN)


class WeatherPlugin:
    @hookimpl
    def register_tools(self, register):
        register(weather_forecast)


async def test_refusals_name_every_failing_field(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("weather", WeatherPlugin())])
    async with http_client(kernel) as client:
        resp = await client.post(
            "/v1/tools/weather/forecast", json={"city": "X", "days": 40, "units": "kelvin", "extra": 1}
        )
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["error"] == "invalid_request"
    assert {d["field"]: d["message"] for d in body["details"]} == {
        "city": "city must be 2 to 60 characters",
        "days": "days must be from 1 to 16",
        "units": 'units must be "imperial" or "metric"',
        "extra": "extra is not an accepted field",
    }
    assert "PAYMENT-REQUIRED" not in resp.headers


async def test_a_paid_call_through_the_kernel_over_x402_and_credits(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("weather", WeatherPlugin())])
    payer = Account.create()
    body = {"city": "Lisbon", "days": 2}
    async with http_client(kernel) as client:
        funded = await client.post(
            "/v1/tools/internal/chain/fund", json={"address": payer.address, "amount": "1"}, headers=OPERATOR
        )
        assert funded.status_code == 200, funded.text
        quote = await client.post("/v1/tools/weather/forecast", json=body)
        assert quote.status_code == 402 and quote.json()["amount_usdc"] == "0.002000"
        paid = await client.post(
            "/v1/tools/weather/forecast",
            json=body,
            headers={
                "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
                "X-Quote-ID": quote.json()["quote_id"],
            },
        )
        _agent, auth = await credits_session(client, "1")
        by_credits = await client.post("/v1/tools/weather/forecast", json={"city": "Porto"}, headers=auth)
    assert paid.status_code == 200, paid.text
    data = paid.json()["data"]
    assert data["tool"] == "weather_forecast" and data["status"] == "completed"
    assert data["result"] == {
        "city": "Lisbon",
        "days": [{"day": 1, "high_c": 21.0}, {"day": 2, "high_c": 22.0}],
        "units": "metric",
    }
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "settled" and receipt["amount_usdc"] == "0.002000"
    assert by_credits.status_code == 200, by_credits.text
    assert len(by_credits.json()["data"]["result"]["days"]) == 3  # the default
