"""What the research engine is handed: a searcher, a reader, optionally a writer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from .model import Hit, Page

# Told what the engine is doing ("searching 3/6"); may be sync or async.
ProgressFn = Callable[[str], Awaitable[None] | None]


class Searcher(Protocol):
    name: str  # reported in the result's meta.providers.search

    async def search(self, query: str, max_results: int, page: int = 1) -> list[Hit]:
        """Up to `max_results` hits for `query`; `page` 2, 3, ... asks for the results after
        the first page (the engine passes it only when it is above 1)."""
        ...


class Reader(Protocol):
    async def read(self, url: str) -> Page:
        """The page's main content; raises (a ToolError, usually) when it cannot be read."""
        ...


class Writer(Protocol):
    name: str  # reported in meta.providers.llm

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The model's answer to chat messages ({role, content}); raises ToolError on failure."""
        ...
