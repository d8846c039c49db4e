"""A test plugin whose one tool asks a public registry through `tollway.Upstream`, so the
kernel's handling of registry answers (their reuse, core/plugin_api/upstream_cache.py, and the
evidence dated by them) is tested without a shipped plugin or its recorded answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated, Any

import httpx
import msgspec

from tollway._core.plugin_api.decorator import tool
from tollway._core.plugin_api.evidence import Evidence
from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Tool, ToolContext
from tollway._core.plugin_api.upstream import Upstream

REGISTRY = Upstream(
    family="registry",
    name="words",
    label="Word registry",
    default_base_url="https://words.registry.test",
    description="Base URL of the test word registry.",
)
DEFINE = "/v1/tools/registry/define"
DEFINITIONS = {"toll": "a charge for the use of a road or a service"}


class Entry(msgspec.Struct):
    word: str
    definition: str | None


class RegistryAnswer(msgspec.Struct):
    result: Entry
    evidence: Evidence


@tool(path=DEFINE, price="0.001", family="registry", examples={"word": "toll"})
async def registry_define(
    ctx: ToolContext, word: Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
) -> RegistryAnswer:
    """The word registry's definition of a word (null when it has none)."""
    body = await REGISTRY.get_json(ctx, "/define", params={"word": word})
    return RegistryAnswer(
        result=Entry(word=word, definition=body.get("definition")), evidence=Evidence.now("Word registry", as_of=None)
    )


# The hooks: this module is the plugin (`kernel_factory(plugins=[("registry", registry_plugin)])`).
@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(registry_define)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    register(*REGISTRY.settings)


class SlowRegistry(httpx.AsyncBaseTransport):
    """The registry, answering after a pause (so lookups overlap); `served` counts its answers."""

    def __init__(self, pause_s: float = 0.05) -> None:
        self.pause_s = pause_s
        self.served: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(self.pause_s)
        assert request.url.host == "words.registry.test" and request.url.path == "/define", request.url
        word = request.url.params["word"]
        self.served.append(word)
        body: dict[str, Any] = {"word": word, "definition": DEFINITIONS.get(word)}
        return httpx.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})
