"""The `company_sanctions` and `person_sanctions` tools: one input, one answer,
two declarations that differ only in which entries they search. Both read the lists of
the service they run on (`lists.store_of(context)`), so each is built for its context."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Example, Fact, FieldError, PluginContext, Refusal, Tool, ToolContext, ToolError, search_key

from . import lists
from .ofac import Entry

PRICE = "0.01"
CATEGORY = "verification"
COMPANY_SANCTIONS = "company_sanctions"  # the tools' names
PERSON_SANCTIONS = "person_sanctions"

Name = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=200,
        pattern=r"[^\W_]",  # at least one letter or digit
        description="Name to screen, 2 to 200 characters; word order, accents, case and punctuation do not matter.",
        examples=["Nicolas Maduro"],
    ),
]
MinScore = Annotated[float, Meta(ge=0.5, le=1, description="Lowest score to report, 0.5 to 1 (default 0.85).")]
Limit = Annotated[int, Meta(ge=1, le=25, description="Most matches to return, 1 to 25 (default 10).")]


class SanctionsInput(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    min_score: MinScore = 0.85
    limit: Limit = 10


class SanctionsMatch(msgspec.Struct):
    score: float  # 0.5 to 1
    matched_name: str  # the entry's own name or one of its other names
    entry: Entry


class ListChecked(msgspec.Struct):
    name: str
    as_of: str | None  # YYYY-MM-DD: the day OFAC published the list loaded; null when unknown


class SanctionsAnswer(msgspec.Struct):
    total: int  # every entry at or above min_score; may exceed len(matches)
    matches: list[SanctionsMatch]
    lists: list[ListChecked]


def check(context: PluginContext, value: SanctionsInput) -> None:
    """Before payment: the one-word rule, then the lists' freshness (503, not charged)."""
    words = value.name.split()
    if len(words) == 1 and sum(c.isalpha() for c in words[0]) < 3:
        raise FieldError("name", "A one-word name needs at least 3 letters")
    if not any(c.isalnum() for c in value.name):
        raise FieldError("name", "Expected at least one letter or digit")
    stale = lists.store_of(context).out_of_date()
    if stale:
        raise Refusal(
            "list_out_of_date",
            f"Not answered: out of date (never loaded or older than 72 hours): {', '.join(stale)}.",
            status=503,
            details={"lists": stale},
        )


def _runner(
    context: PluginContext, person: bool
) -> Callable[[SanctionsInput, ToolContext], Awaitable[SanctionsAnswer]]:
    async def run(value: SanctionsInput, ctx: ToolContext) -> SanctionsAnswer:
        store = lists.store_of(context)
        stale = store.out_of_date()
        if stale:  # went stale between the check and the payment: not charged
            raise ToolError(
                "list_out_of_date", f"Out of date: {', '.join(stale)}.", status=503, details={"lists": stale}
            )
        hits = store.search(value.name, person=person, min_score=value.min_score)
        return SanctionsAnswer(
            total=len(hits),
            matches=[SanctionsMatch(round(h.score, 4), h.matched_name, h.entry) for h in hits[: value.limit]],
            lists=[ListChecked(**c) for c in store.checked()],
        )

    run.__name__ = "run_person" if person else "run_company"
    return run


def _facts(context: PluginContext, tool_name: str, *, searches_public: bool):
    def facts(value: SanctionsInput, answer: SanctionsAnswer) -> list[Fact]:
        """One fact per returned entry, keyed by its OFAC entry number (for watches),
        and the search itself (total and the entries found, with their scores) keyed
        by the hash of its input. A person's name may be a private individual's, so a
        person search is kept to the agent that made it."""
        store = lists.store_of(context)
        as_of = {c.name: c.as_of for c in answer.lists}
        out = []
        for m in answer.matches:
            found = store.find(m.entry.number, m.entry)
            list_name = found[0].name if found else None
            out.append(
                Fact(
                    attribute=tool_name,
                    key=str(m.entry.number),
                    value={"list": list_name, **msgspec.to_builtins(m.entry)},
                    source=lists.SOURCE,
                    as_of=as_of.get(list_name) if list_name else None,
                )
            )
        out.append(
            Fact(
                attribute=tool_name,
                key=search_key(value),
                value={
                    "total": answer.total,
                    "matches": [
                        {"number": m.entry.number, "name": m.entry.name, "score": m.score} for m in answer.matches
                    ],
                },
                source=lists.SOURCE,
                as_of=max((c.as_of for c in answer.lists if c.as_of is not None), default=None),
                public=searches_public,
            )
        )
        return out

    return facts


_DESCRIPTION = (
    "Screens a {what} name against the US Treasury's OFAC sanctions lists (the SDN list and the consolidated "
    "non-SDN list), aliases included. Scores run from 0.5 to 1: 1 means the same words in any order; lower "
    "scores mean a spelling variant, a missing or extra word, a missing middle name or an initial. `total` "
    "counts every entry at or above min_score. {never} A screening aid, not a legal determination."
)
_PERSON = {"what": "person's", "never": "Individuals only; never a company."}
_COMPANY = {"what": "company, vessel or aircraft", "never": "Entities, vessels and aircraft only; never an individual."}


def screening_tool(context: PluginContext, *, person: bool) -> Tool:
    """`person_sanctions` (individuals) or `company_sanctions` (entities, vessels, aircraft),
    reading the lists of the service `context` belongs to."""
    name = PERSON_SANCTIONS if person else COMPANY_SANCTIONS
    return Tool(
        name=name,
        path=f"/v1/tools/lookup/{name.replace('_', '-')}",
        title="Person sanctions screening" if person else "Company sanctions screening",
        description=_DESCRIPTION.format(**(_PERSON if person else _COMPANY)),
        category=CATEGORY,
        subcategory=name,
        input_type=SanctionsInput,
        output_type=SanctionsAnswer,
        run=_runner(context, person),
        price=PRICE,
        family="sanctions",
        payment_header="payment-signature",
        rate_limit="lookup",
        examples=(
            Example(title="Screen a person's name", input={"name": "Nicolas Maduro", "min_score": 0.85, "limit": 5})
            if person
            else Example(title="Screen a company name", input={"name": "Anglo-Caribbean Co Ltd"}),
        ),
        check=functools.partial(check, context),
        facts=_facts(context, name, searches_public=not person),
        searches=True,
    )
