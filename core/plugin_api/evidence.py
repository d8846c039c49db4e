"""`Evidence`: the one block every lookup answer carries beside its result, saying
where the data came from and when (docs/upstream.md)."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from tollway._core.basics.ids import iso, now_ms
from tollway._core.plugin_api.upstream_cache import oldest_answer_ms


class UpstreamCall(msgspec.Struct):
    """One request made to the source while answering, by the time it was answered."""

    retrieved_at: str


class Evidence(msgspec.Struct):
    """Where a lookup's answer comes from, when it was retrieved, and the source's own date for it."""

    source: str  # the public body the data comes from, fixed per tool
    source_kind: str  # `public` or `commercial`
    retrieved_at: str  # ISO 8601 UTC time of the lookup
    as_of: str | None  # the source's own date for the data; null when it gives none
    # Served only by tools that say when each of their requests was answered.
    calls: list[UpstreamCall] | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def now(
        cls, source: str, *, as_of: str | None, source_kind: str = "public", calls: Iterable[str] | None = None
    ) -> Evidence:
        """Evidence of the running tool: retrieved when the oldest registry answer it used
        arrived (now when it used none); `calls` are the answer times `Upstream.send` recorded."""
        return cls(
            source=source,
            source_kind=source_kind,
            retrieved_at=iso(oldest_answer_ms() or now_ms()),
            as_of=as_of,
            calls=msgspec.UNSET if calls is None else [UpstreamCall(retrieved_at=t) for t in calls],
        )
