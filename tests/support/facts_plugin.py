"""A data tool for the history tests whose source is a dict the test edits:
`item_facts` answers an item's current value from `CATALOGUE` and records it as a
fact (public, or private with `private: true`), with the kind and region as
Benchmark peers and `score`/`count` as benchmarkable numbers; a search by
`prefix` records the keys found under the hash of its input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import msgspec

from tollway import Benchmarkable, Example, Fact, Tool, ToolContext, ToolError, hookimpl, search_key

SOURCE = "test catalogue"
CATALOGUE: dict[str, dict[str, Any]] = {}  # item key (capitals) -> its value; tests edit it


class ItemInput(msgspec.Struct, forbid_unknown_fields=True):
    key: Annotated[str, msgspec.Meta(min_length=1, max_length=40)] | None = None
    prefix: Annotated[str, msgspec.Meta(min_length=1, max_length=40)] | None = None
    private: bool = False


class ItemEvidence(msgspec.Struct):
    source: str
    as_of: str | None


class ItemAnswer(msgspec.Struct):
    result: dict[str, Any]
    evidence: ItemEvidence


async def run(value: ItemInput, ctx: ToolContext) -> ItemAnswer:
    if value.key is not None:
        item = CATALOGUE.get(value.key.upper())
        if item is None:
            raise ToolError("invalid_input", f"no item {value.key}", status=404)
        return ItemAnswer(
            result={"key": value.key.upper(), "value": item}, evidence=ItemEvidence(SOURCE, item.get("as_of"))
        )
    found = sorted(k for k in CATALOGUE if k.startswith((value.prefix or "").upper()))
    return ItemAnswer(result={"keys": found}, evidence=ItemEvidence(SOURCE, None))


def facts(value: ItemInput, answer: ItemAnswer) -> list[Fact]:
    if value.key is None:
        return [
            Fact(
                attribute="item_facts",
                key=search_key(value),
                value=answer.result,
                source=SOURCE,
                public=not value.private,
            )
        ]
    item = answer.result["value"]
    return [
        Fact(
            attribute="item_facts",
            key=answer.result["key"],
            value={k: v for k, v in item.items() if k != "as_of"},
            source=SOURCE,
            as_of=item.get("as_of"),
            public=not value.private,
            peers={"kind": item.get("kind"), "region": item.get("region")},
        )
    ]


def check(value: ItemInput) -> None:
    from tollway import FieldError

    if (value.key is None) == (value.prefix is None):
        raise FieldError("key", "give exactly one of key and prefix")


ITEM_FACTS = Tool(
    name="item_facts",
    path="/v1/tools/test/item-facts",
    title="Catalogue item",
    description="An item of the test catalogue, recorded for history.",
    category="data",
    input_type=ItemInput,
    output_type=ItemAnswer,
    run=run,
    price="0.005",
    family="items",
    examples=(Example("an item", {"key": "A1"}),),
    check=check,
    facts=facts,
    benchmark=Benchmarkable(fields=("score", "count"), peers=("kind", "region")),
    searches=True,
)


class FactsPlugin:
    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        register(ITEM_FACTS)
