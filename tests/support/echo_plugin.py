"""A tiny plugin for kernel tests: `echo_words` counts words, `flaky` fails on demand.

Real plugins reach upstream registries; these tools need nothing, so payment and
receipt tests exercise the kernel alone.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._core.plugin_api.tool import Example, Tool, ToolContext, ToolError


class EchoInput(msgspec.Struct, forbid_unknown_fields=True):
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    repeat: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1


class EchoOutput(msgspec.Struct):
    result: dict
    evidence: dict


RUNS: list[str] = []  # request ids the tool actually ran for


async def run_echo(value: EchoInput, ctx: ToolContext) -> EchoOutput:
    RUNS.append(ctx.request_id)
    ctx.provider_cost = 7 * value.repeat  # what an upstream would have cost us
    return EchoOutput(
        result={"text": value.text * value.repeat, "words": len(value.text.split())}, evidence={"source": "echo"}
    )


async def run_flaky(value: EchoInput, ctx: ToolContext) -> EchoOutput:
    RUNS.append(ctx.request_id)
    if value.text == "boom":
        raise ToolError("provider_unavailable", "upstream down", status=503)
    if value.text == "crash":
        raise RuntimeError("bug")
    return EchoOutput(result={"text": value.text}, evidence={"source": "echo"})


def price_by_repeat(value: EchoInput) -> int:
    return 1_000 * value.repeat


ECHO = Tool(
    name="echo_words",
    path="/v1/tools/test/echo",
    title="Echo",
    description="Echoes text (kernel tests).",
    category="data",
    input_type=EchoInput,
    output_type=EchoOutput,
    run=run_echo,
    price=price_by_repeat,
    family="echo",
    examples=(Example("hello", {"text": "hello world"}),),
)

FLAKY = Tool(
    name="flaky",
    path="/v1/tools/test/flaky",
    title="Flaky",
    description="Fails on demand (kernel tests).",
    category="verification",
    input_type=EchoInput,
    output_type=EchoOutput,
    run=run_flaky,
    price="0.010",
    family="echo",
    examples=(Example("ok", {"text": "fine"}),),
)


ECHO_KEYED = Tool(
    name="echo_keyed",
    path="/v1/tools/test/echo-keyed",
    title="Echo with Idempotency-Key",
    description="Echoes text; honours an optional Idempotency-Key (kernel tests).",
    category="data",
    input_type=EchoInput,
    output_type=EchoOutput,
    run=run_flaky,
    price="0.003",
    family="echo",
    idempotency="optional",
    examples=(Example("ok", {"text": "fine"}),),
)


class EchoPlugin:
    @hookimpl
    def register_tools(self, register):
        register(ECHO)
        register(FLAKY)
        register(ECHO_KEYED)
