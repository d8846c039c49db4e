"""The values the research engine passes around and the report it returns."""

from __future__ import annotations

import dataclasses
from typing import Literal

import msgspec

from ..search_providers import Hit  # noqa: F401 - one search result, in the web search result's shape (re-exported)

Depth = Literal["quick", "deep"]


@dataclasses.dataclass(frozen=True)
class Page:
    """One page read: its final URL, title, main content as Markdown, and when."""

    url: str
    title: str | None
    markdown: str
    retrieved_at: str  # ISO 8601 UTC


@dataclasses.dataclass(frozen=True)
class Passage:
    """A stretch of one source's text, the unit that is ranked and quoted."""

    source: int  # the source's number `n`
    text: str


class Source(msgspec.Struct):
    n: int  # what `[n]` in the report refers to
    url: str
    title: str | None
    retrieved_at: str


class Providers(msgspec.Struct):
    search: str
    llm: str | None  # null when no language model took part


class ResearchMeta(msgspec.Struct):
    queries: list[str]
    pages_read: int
    pages_failed: int
    providers: Providers
    extractive: bool  # the report quotes passages instead of being written by a model
    citations_removed: int  # citations the model made to sources that were not read


class ResearchReport(msgspec.Struct):
    topic: str
    depth: str
    report: str  # Markdown with `[n]` citations
    sources: list[Source]
    meta: ResearchMeta
