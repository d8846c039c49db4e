"""A tool whose HTTP path carries an input field (`/v1/tools/website/{site_id}/update`): the
HTTP front puts the path's value into the body, refuses a body that says otherwise (naming
the field), and OpenAPI declares the path parameter; a path naming no input field is refused
at declaration."""

from __future__ import annotations

import msgspec
import pytest

from tollway import Tool, ToolContext, hookimpl
from tollway.testing import credits_session, http_client


class Poke(msgspec.Struct, forbid_unknown_fields=True):
    thing_id: str
    times: int = 1


class Poked(msgspec.Struct):
    thing_id: str
    times: int


async def poke(value: Poke, ctx: ToolContext) -> Poked:
    return Poked(value.thing_id, value.times)


POKE = Tool(
    name="thing_poke",
    path="/v1/tools/things/{thing_id}/poke",
    title="Poke a thing",
    description="Pokes the thing.",
    category="data",
    input_type=Poke,
    output_type=Poked,
    run=poke,
    price="0.001",
    family="things",
)


class ThingsPlugin:
    @hookimpl
    def register_tools(self, register):
        register(POKE)


async def test_the_path_value_reaches_the_tool_and_a_differing_body_is_refused(kernel_factory):
    kernel = await kernel_factory(plugins=[("things", ThingsPlugin())])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        done = await client.post("/v1/tools/things/th_42/poke", json={"times": 3}, headers=auth)
        assert done.status_code == 200, done.text
        assert done.json()["data"]["thing_id"] == "th_42" and done.json()["data"]["times"] == 3
        same = await client.post("/v1/tools/things/th_42/poke", json={"thing_id": "th_42"}, headers=auth)
        assert same.status_code == 200, same.text
        clash = await client.post("/v1/tools/things/th_42/poke", json={"thing_id": "th_7", "times": "x"}, headers=auth)
        assert clash.status_code == 400 and clash.json()["error"] == "invalid_request"
        assert [d["field"] for d in clash.json()["details"]] == ["thing_id"]
        bad = await client.post("/v1/tools/things/th_42/poke", json={"times": "x"}, headers=auth)
        assert bad.status_code == 400 and [d["field"] for d in bad.json()["details"]] == ["times"]
        doc = (await client.get("/schema/openapi.json")).json()
        op = doc["paths"]["/v1/tools/things/{thing_id}/poke"]["post"]
        assert op["parameters"][0] == {"$ref": "#/components/parameters/ThingIdInPath"}
        assert {"name": "thing_id", "in": "path"}.items() <= doc["components"]["parameters"]["ThingIdInPath"].items()
        assert (await client.get("/v1/balance", headers=auth)).json()["credits_balance"] == "0.998000"


def test_a_path_field_must_be_an_input_field():
    with pytest.raises(ValueError, match="must be an input field"):
        Tool(**{**{f: getattr(POKE, f) for f in ("name", "title", "description", "category", "input_type",
                                                  "output_type", "run", "price", "family")},
                "path": "/v1/tools/things/{other}/poke"})  # fmt: skip
    assert POKE.path_for({"thing_id": "a/b c"}) == "/v1/tools/things/a%2Fb%20c/poke"
