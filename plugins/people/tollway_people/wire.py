"""People research's input and result shapes (docs/people.md)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

EMAIL = re.compile(r"^[^@\s]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$")  # checked by code: a short listing
HINTS = ("company", "location", "email", "url")


class PeopleResearchInput(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    name: Annotated[
        str,
        Meta(min_length=2, max_length=200, description="The person's full name.", examples=["Dana Reyes"]),
    ]
    purpose: Annotated[
        str,
        Meta(min_length=3, max_length=500, description="Why you research them: kept on your receipt, never answered."),
    ]
    company: Annotated[str, Meta(min_length=1, max_length=200, description="Their employer, by name or domain.")] | (
        UnsetType
    ) = UNSET
    location: (
        Annotated[str, Meta(min_length=2, max_length=200, description="Where they are, e.g. a city and region.")]
        | UnsetType
    ) = UNSET
    email: Annotated[str, Meta(max_length=320, description="An email address of theirs.")] | (UnsetType) = UNSET
    url: (
        Annotated[
            str,
            Meta(
                min_length=8,
                max_length=500,
                pattern=r"^https?://",
                description="A public page of theirs, read first.",
            ),
        ]
        | UnsetType
    ) = UNSET
    depth: Annotated[
        Literal["quick", "deep"],
        Meta(description="`quick`: one search, up to 5 pages read; `deep`: several searches, up to 12."),
    ] = "quick"


class Cited(msgspec.Struct):
    """One value of the profile, the pages it comes from and how sure we are of it."""

    value: str
    sources: list[str]  # URLs (or `enrichment:<provider>` for the enrichment record without a page)
    confidence: float  # 0 to 1


class PersonProfile(msgspec.Struct):
    names: list[Cited]  # the full name as found, then any other names used
    role: Cited | None  # the current job title
    employer: Cited | None
    location: Cited | None  # city and region, never a street address
    links: list[Cited]  # public pages about them (profiles, a personal site, a team page)
    summary: Cited | None  # two or three sentences of public, work-related facts


class Candidate(msgspec.Struct):
    match_score: float  # 0 to 1: how well the hints given fit this person
    matched: list[str]  # the hints that fit (company, location, email, url)
    profile: PersonProfile


class Source(msgspec.Struct):
    url: str
    title: str | None
    kind: Literal["page", "enrichment"]
    retrieved_at: str  # ISO 8601 UTC


class Providers(msgspec.Struct):
    search: str
    enrichment: str | None  # null when no enrichment provider took part
    llm: str | None  # null when no language model wrote the profile


class PeopleMeta(msgspec.Struct):
    queries: list[str]
    pages_read: int
    pages_failed: int
    providers: Providers
    extractive: bool  # the profile was taken from the pages' sentences, not written by a language model
    withheld: int  # sentences, values and links left out as sensitive


class PeopleResearchResult(msgspec.Struct):
    """The people research result (docs/people.md)."""

    name: str  # as asked
    depth: str
    ambiguous: bool  # the hints fit several people: `profile` is null, `candidates` lists them
    match_score: float | None  # the profile's, when there is one
    matched: list[str]  # the hints the profile fits
    profile: PersonProfile | None
    candidates: list[Candidate]  # best first, when ambiguous; otherwise empty
    synthesis: Literal["llm", "extractive"]
    note: str  # how the profile was made, in a sentence
    sources: list[Source]
    meta: PeopleMeta
