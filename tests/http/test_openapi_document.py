"""The OpenAPI document with every installed plugin loaded: every `$ref`
resolves (plugins' same-named types get distinct component names), every tool
route is there with its input schema, and job tools document their 202."""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from tollway.testing import http_client


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


async def test_every_reference_resolves_with_all_plugins(kernel_factory):
    installed = {ep.name for ep in entry_points(group="tollway")}
    kernel = await kernel_factory(installed=installed)
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    components = doc["components"]["schemas"]
    missing = {r for r in refs(doc) if r.rsplit("/", 1)[1] not in components}
    assert not missing
    for tool in kernel.tools.values():
        op = doc["paths"][tool.path]["post"]
        assert op["operationId"] == tool.name
        assert ("202" in op["responses"]) == (tool.mode == "job")
        assert "402" in op["responses"] and "400" in op["responses"]
    assert len(kernel.tools) >= 10
