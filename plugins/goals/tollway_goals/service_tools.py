"""The service's own tools as the model's function tools: every configured tool but
`compute` (a goal does not buy goals), with its input schema and price, its answers cut to
a size a transcript can carry."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tollway import usdc

LEAVE_OUT = ("compute",)
MAX_RESULT_CHARS = 20_000


def callable_tools(platform: Any) -> list[Any]:
    delegated = getattr(platform, "delegated", None)
    return [] if delegated is None else delegated.callable_tools(leave_out=LEAVE_OUT)


def definitions(platform: Any) -> list[dict[str, Any]]:
    out = []
    for tool in callable_tools(platform):
        price = (
            "its price depends on the input" if tool.fixed_price is None else f"{usdc(tool.fixed_price)} USDC per call"
        )
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": f"{tool.short_description} Paid from the goal's budget ({price}).",
                    "parameters": msgspec.json.schema(tool.input_type),
                },
            }
        )
    return out


def fit(output: Any) -> Any:
    """The tool's answer, or, when it is too long for a transcript, its start as text."""
    text = json.dumps(output, ensure_ascii=False)
    if len(text) <= MAX_RESULT_CHARS:
        return output
    return {"truncated": True, "start": text[:MAX_RESULT_CHARS]}
