"""How far a run may go: sources wanted and promised per depth, searches allowed, and its deadline."""

from __future__ import annotations

import time

# Readable sources: quick promises 5 to 10 and aims for 8; deep promises 20 or more and aims for 24.
SOURCE_TARGET: dict[str, int] = {"quick": 8, "deep": 24}
SOURCE_MINIMUM: dict[str, int] = {"quick": 5, "deep": 20}
RESULTS_PER_QUERY: dict[str, int] = {"quick": 8, "deep": 20}  # a web search gives at most 20
READ_CONCURRENCY: dict[str, int] = {"quick": 4, "deep": 6}
# Searches one run may make in all (the planned queries, their further result pages and new
# reformulations): each may cost the operator a provider fee.
MAX_SEARCHES: dict[str, int] = {"quick": 12, "deep": 32}
MAX_RESULT_PAGE = 5  # how deep into one query's results a run follows
# How long a run may plan, search and read before it writes with what it has (seconds):
# quick research promises 2 to 3 minutes and deep 5 to 10 (docs/web.md), writing included.
SEARCH_TIME_S: dict[str, float] = {"quick": 150.0, "deep": 480.0}
PAGE_TIMEOUT_S = 25.0


class Deadline:
    """A moment `seconds` from now on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._at - time.monotonic())

    @property
    def passed(self) -> bool:
        return self.left() <= 0.0
