"""The `product_drug_adverse_events` tool: its input/output types, its checks and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Fact, FieldError, Tool, ToolContext

from . import openfda

SOURCE = "FDA"  # US Food and Drug Administration, through openFDA (FAERS)
SOURCE_KIND = "public"

# No double quote, backslash or control character: the name is sent inside a
# quoted openFDA phrase. At least one letter or digit is checked in `check`.
DrugName = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=100,
        pattern=r'^[^"\\\x00-\x1f\x7f]*$',
        description="Product name as reported (brand or generic), 2 to 100 characters; several words match as a phrase.",
        examples=["pembrolizumab"],
    ),
]
Limit = Annotated[int, Meta(ge=1, le=25, description="Most reactions to return, 1 to 25 (default 10).")]


class DrugAdverseEventsInput(msgspec.Struct, forbid_unknown_fields=True):
    drug_name: DrugName
    limit: Limit = 10


class DrugReaction(msgspec.Struct):
    """A Drug reaction (docs/drugs.md)."""

    reaction: str  # MedDRA preferred term, sentence case
    reports: int  # reports naming it


class DrugAdverseEventsResult(msgspec.Struct):
    drug_name: str
    reactions: list[DrugReaction]  # most reported first; empty when no reports


class DrugAdverseEventsAnswer(msgspec.Struct):
    result: DrugAdverseEventsResult
    evidence: Evidence  # as_of: openFDA's meta.last_updated; null when openFDA found nothing


def check(value: DrugAdverseEventsInput) -> None:
    name = " ".join(value.drug_name.split())
    if len(name) < 2:
        raise FieldError("drug_name", "Expected at least 2 characters besides spaces")
    if not any(c.isalnum() for c in name):
        raise FieldError("drug_name", "Expected at least one letter or digit")


async def run(value: DrugAdverseEventsInput, ctx: ToolContext) -> DrugAdverseEventsAnswer:
    counts = await openfda.fetch_reaction_counts(ctx, value.drug_name, value.limit)
    return DrugAdverseEventsAnswer(
        result=DrugAdverseEventsResult(
            drug_name=" ".join(value.drug_name.split()),
            reactions=[DrugReaction(reaction=r.reaction, reports=r.reports) for r in counts.reactions[: value.limit]],
        ),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=counts.last_updated),
    )


def facts(value: DrugAdverseEventsInput, answer: DrugAdverseEventsAnswer) -> list[Fact]:
    """One fact per lookup keyed by the normalized drug name (single-spaced, upper
    case): the reactions returned and their report counts, plus the top count as a
    number a benchmark can read. It depends on `limit` only through the list."""
    reactions = answer.result.reactions
    return [
        Fact(
            attribute="product_drug_adverse_events",
            key=openfda.normalize_drug_name(value.drug_name),
            value={
                "top_reports": reactions[0].reports if reactions else 0,
                "reactions": {r.reaction: r.reports for r in reactions},
            },
            source=answer.evidence.source,
            as_of=answer.evidence.as_of,
        )
    ]


PRODUCT_DRUG_ADVERSE_EVENTS = Tool(
    name="product_drug_adverse_events",
    path="/v1/tools/lookup/product-drug-adverse-events",
    title="Drug adverse events",
    summary="The adverse reactions most often named on FDA (FAERS) reports for a drug, with their report counts.",
    description=(
        "The adverse reactions most often named on FDA Adverse Event Reporting System (FAERS) reports whose "
        "product name matches the drug (several words match as a phrase), from openFDA: each reaction in "
        "sentence case with the number of reports naming it, most reported first. Empty when there are no "
        "reports. A report does not show that the drug caused the reaction; the total report count is not given."
    ),
    category="data",
    subcategory="drug_adverse_events",
    input_type=DrugAdverseEventsInput,
    output_type=DrugAdverseEventsAnswer,
    run=run,
    price="0.005",
    family="drugs",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(title="Most reported reactions for pembrolizumab", input={"drug_name": "pembrolizumab", "limit": 5}),
    ),
    check=check,
    facts=facts,
)
