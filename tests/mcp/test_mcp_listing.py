"""The MCP `tools/list` of every installed tool, as the SDK's client receives it:
within its byte budget, in MCP words, with schemas every example validates
against; solve and predict carry an example and a bound on every field."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from typing import Any

import jsonschema
import pytest
from mcp import Client

from tollway._mcp_server import build_server
from tollway._runtime.plugins import GROUP
from tollway.testing import http_client

# Bytes of the compact JSON of the listing (`{"tools": [...]}`). It was 66.7 KB before the
# listing was made compact; raise this only for a reason worth the context it costs every
# agent. 30,000 until the Changes and Benchmark tools, the solicitations family (1.3 KB), the four
# watch tools (about 2 KB, with the watchable pairs named), web search and research
# (about 1.3 KB together) joined it; 37,000 until compute goals (the compute tool with its
# nested params, the goal, cases, case and event tools, and the three connection tools:
# about 5.4 KB); 43,000 until email_send, the inbox's two reads (about 1.5 KB), email
# verification (0.8 KB), SMS and voice with the SMS inbox (3.1 KB), physical mail (2 KB) and
# person enrichment (1.6 KB); 53,000 until the kernel's value_tag and return_on_spend
# (1.4 KB together, 665 bytes past the headroom left); 53,700 until the souls marketplace's
# buyer side (soul_buy with its input, souls_list, souls_search, soul_get, soul_rate: 3.4 KB);
# 57,300 until goal_cancel (0.55 KB), the compute budget's default stated in its schema and
# title, and the route tools' query parameters typed (integer with bounds, boolean, enum)
# instead of plain strings (347 bytes for the inbox, SMS inbox and souls listings and return_on_spend);
# 58,400 until agent commerce's commerce_search and commerce_buy (4.0 KB: the purchase's items,
# buyer and fulfilment address are nested objects an agent must fill in); 62,500 until the
# browser's browser_task and the four browser_profiles_* tools (3.6 KB: a task's steps are
# one flat Struct with an `action` rather than ten tagged ones, which took 6.2 KB); 66,100
# until browser_artifact_link (0.4 KB: an agent on MCP renews an artifact's expired link); 66,500
# until website_build and website_update (5.1 KB: a brief's pages, style and publication target,
# and an update's page changes; their patterns kept short, a domain checked by code instead);
# 71,700 until people_research (2026-11-28, 1.4 KB: a name, a purpose, four hints and a depth,
# the email checked by code instead of a pattern).
LIST_BUDGET = 73_200
# The listing of a selection (`tollway mcp --tools ...`, `/mcp?tools=...`): what an agent given
# only these tools reads, each within a budget of its own and a fraction of LIST_BUDGET.
SELECTION_BUDGETS = {
    "sanctions": (2_600, {"company_sanctions", "person_sanctions", "describe_tool"}),
    "solve,predict": (16_100, {"solve", "predict", "job_status", "describe_tool"}),
    "vehicles,balance,receipts": (
        4_700,
        {"vehicle_recalls", "vehicle_complaints", "vehicle_identification", "balance", "receipts", "describe_tool"},
    ),
}
HTTP_WORDS = re.compile(r"X-Agent-ID|Idempotency-Key|/v1/requests|\b202\b|\b400\b|header|X-Quote-ID|\bpoll")
AUDIT = {"memo", "decisionContext"}  # the front's own: decisionContext is free-form by design


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(installed={ep.name for ep in entry_points(group=GROUP)})


async def listing(kernel) -> list[dict[str, Any]]:
    async with Client(build_server(kernel).server) as client:
        listed = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]


async def test_the_listing_of_every_installed_tool_fits_its_budget_in_mcp_words(kernel):
    tools = await listing(kernel)
    size = len(json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False).encode())
    assert size <= LIST_BUDGET, f"tools/list is {size} bytes, over its budget of {LIST_BUDGET}"
    names = {t["name"] for t in tools}
    assert set(kernel.tools) <= names and {"solve", "predict", "vehicle_recalls", "describe_tool"} <= names
    for tool in tools:
        text = tool["description"] + json.dumps(tool["inputSchema"])
        assert not HTTP_WORDS.findall(text), (tool["name"], HTTP_WORDS.findall(text))
        assert "outputSchema" not in tool  # describe_tool serves it


@pytest.mark.parametrize("spec", sorted(SELECTION_BUDGETS))
async def test_a_selected_listing_has_only_its_tools_within_its_budget(kernel, spec):
    from tollway._mcp_server.selection import resolve

    budget, names = SELECTION_BUDGETS[spec]
    async with Client(build_server(kernel, tools=resolve(kernel, spec)).server) as client:
        listed = await client.list_tools()
    tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
    size = len(json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False).encode())
    assert {t["name"] for t in tools} == names
    assert size <= budget < LIST_BUDGET // 4, f"tools/list of {spec} is {size} bytes, over its budget of {budget}"


async def test_every_example_validates_against_its_listed_schema(kernel):
    schemas = {t["name"]: t["inputSchema"] for t in await listing(kernel)}
    checked = 0
    for tool in kernel.tools.values():
        jsonschema.Draft202012Validator.check_schema(schemas[tool.name])
        for example in tool.examples:
            arguments = dict(example.input)
            if tool.idempotency == "required":
                arguments["idempotency_key"] = "k-1"
            jsonschema.validate(arguments, schemas[tool.name], cls=jsonschema.Draft202012Validator)
            checked += 1
    assert checked >= len(kernel.tools)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = {**schema["$defs"][node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def unbounded(schema: dict[str, Any]) -> list[str]:
    """Paths of fields without bounds: numbers need a minimum and a maximum, strings a
    maxLength (or an enum), arrays a maxItems, maps a maxProperties."""
    found: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        node = _resolve(schema, node)
        for i, branch in enumerate(node.get("anyOf", [])):
            walk(branch, f"{path}|{i}")
        kind = node.get("type")
        if "enum" in node or kind == "boolean":
            return
        if kind in ("number", "integer"):
            if not ({"minimum", "exclusiveMinimum"} & node.keys() and {"maximum", "exclusiveMaximum"} & node.keys()):
                found.append(path)
        elif kind == "string":
            if "maxLength" not in node:
                found.append(path)
        elif kind == "array":
            if "maxItems" not in node:
                found.append(path)
            if isinstance(node.get("items"), dict):
                walk(node["items"], f"{path}[]")
            for i, item in enumerate(node.get("prefixItems", [])):
                walk(item, f"{path}[{i}]")
        elif kind == "object":
            if "properties" in node:
                for name, prop in node["properties"].items():
                    if name not in AUDIT:
                        walk(prop, f"{path}.{name}" if path else name)
            elif isinstance(node.get("additionalProperties"), dict):
                if "maxProperties" not in node:
                    found.append(path)
                walk(node["additionalProperties"], f"{path}.*")
        elif "anyOf" not in node:
            found.append(path)

    walk(schema, "")
    return found


@pytest.mark.parametrize("name", ["solve", "predict"])
async def test_solve_and_predict_bound_every_field_and_show_an_example(kernel, name):
    (tool,) = [t for t in await listing(kernel) if t["name"] == name]
    schema = tool["inputSchema"]
    assert unbounded(schema) == []
    (example,) = schema["examples"]
    assert example == dict(kernel.tools[name].examples[0].input)
    # what a client sees is what the service checks: a field past a bound is refused before payment
    assert schema["properties"]["time_limit_s"]["maximum"] == (300 if name == "solve" else 120)


async def test_the_new_bounds_are_enforced_before_payment(kernel):
    long_id = "x" * 101
    solve = {
        "problem": "allocation",
        "allocation": {
            "objective": "minimise_cost",
            "items": [{"id": long_id}],
            "options": [{"id": "o", "capacity": 1}],
            "pairs": [{"item": long_id, "option": "o", "cost": 1}],
        },
    }
    predict = {
        "model": "simulation",
        "simulation": {
            "variables": [{"id": "x", "distribution": {"kind": "normal", "mean": 2e15, "sd": 1}}],
            "outputs": [{"id": "y", "expression": "x"}],
        },
    }
    async with http_client(kernel) as client:
        too_long = await client.post("/v1/tools/solve", json=solve, headers={"Idempotency-Key": "k-solve"})
        too_big = await client.post("/v1/tools/predict", json=predict, headers={"Idempotency-Key": "k-predict"})
    assert (
        too_long.status_code == 400
        and too_long.json()["error"] == "invalid_input"
        and too_long.json()["code"] == "bad_value"
    )
    assert too_long.json()["details"][0]["field"] == "allocation.items[0].id"
    assert too_big.status_code == 400 and too_big.json()["code"] == "bad_value", too_big.text
    assert too_big.json()["details"][0]["field"] == "simulation.variables[0].distribution.mean"
    assert "PAYMENT-REQUIRED" not in too_long.headers and "PAYMENT-REQUIRED" not in too_big.headers
