"""The checked-in generated code of both clients is what clients/generate.py makes from the
OpenAPI document of a service with every installed plugin (`make clients` regenerates it)."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tollway.testing import http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import generate  # noqa: E402  (clients/generate.py)


@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_the_generated_clients_are_current(kernel_factory):
    kernel = await kernel_factory(installed={ep.name for ep in entry_points(group="tollway")})
    async with http_client(kernel) as client:
        document = (await client.get("/schema/openapi.json")).json()
    stale = [
        str(path.relative_to(generate.CLIENTS.parent))
        for path, text in generate.render_all(document).items()
        if not path.exists() or path.read_text() != text
    ]
    assert not stale, f"not current, run `make clients`: {stale}"
    tools = {op.name for op in generate.tool_operations(document)}
    assert tools == {tool.name for tool in kernel.tools.values()}
