"""The short-lived memory of registries' answers (docs/upstream.md, "Reusing answers").

A successful GET to a public registry is kept for `ttl_s` seconds (TOLLWAY_UPSTREAM_CACHE_S)
and answers the same request again without a round trip; identical requests that
arrive while one is on its way share its answer. Only 2xx answers are kept, never one
the registry marks `no-store` or `private`, never a body over `max_body` bytes; at most
`max_entries` answers are held, the least recently used going first.

Evidence stays honest: every answer carries the time it arrived, and a tool's
`retrieved_at` is the arrival time of the oldest answer it used (`oldest_answer_ms`).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

# The arrival times of the answers the running tool used (a list shared with any task
# the tool starts); `begin_run` gives each run a new one.
_answers: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("tollway_upstream_answers", default=None)


def begin_run() -> None:
    """Start recording the answers a tool run uses (called as its context is made)."""
    _answers.set([])


def note_answer(arrived_ms: int) -> None:
    times = _answers.get()
    if times is not None:
        times.append(arrived_ms)


def oldest_answer_ms() -> int | None:
    """When the oldest registry answer this run used arrived; None when it used none."""
    times = _answers.get()
    return min(times) if times else None


def keepable(status: int, headers: Any, size: int, max_body: int) -> bool:
    """Whether an answer may be reused: a 2xx the registry lets us keep, not too large."""
    if not 200 <= status < 300 or size > max_body:
        return False
    control = (headers.get("cache-control") or "").lower()
    return "no-store" not in control and "private" not in control


class UpstreamCache:
    """Answers kept by request key for `ttl_s` seconds (see the module docstring)."""

    def __init__(
        self,
        ttl_s: float,
        *,
        max_entries: int = 512,
        max_body: int = 1_000_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.max_body = max_body
        self.clock = clock
        self._kept: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._flying: dict[Hashable, asyncio.Future[Any]] = {}

    def _fresh(self, key: Hashable) -> Any | None:
        entry = self._kept.get(key)
        if entry is None:
            return None
        stored, answer = entry
        if self.clock() - stored >= self.ttl_s:
            del self._kept[key]
            return None
        self._kept.move_to_end(key)
        return answer

    def _keep(self, key: Hashable, answer: Any) -> None:
        self._kept[key] = (self.clock(), answer)
        self._kept.move_to_end(key)
        while len(self._kept) > self.max_entries:
            self._kept.popitem(last=False)

    async def answer(self, key: Hashable, fetch: Callable[[], Awaitable[Any]], keep: Callable[[Any], bool]) -> Any:
        """A fresh kept answer for `key`, else the one being fetched, else `fetch()`'s
        (kept when `keep(answer)`). A failed fetch is raised to every request sharing it."""
        kept = self._fresh(key)
        if kept is not None:
            return kept
        flying = self._flying.get(key)
        if flying is not None:
            try:
                return await asyncio.shield(flying)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not flying.cancelled() or (task is not None and task.cancelling()):
                    raise
                return await fetch()  # the request we waited on was cancelled, not us
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._flying[key] = future
        try:
            answer = await fetch()
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody shared it
            raise
        except BaseException:  # cancelled: whoever shared it fetches for itself
            future.cancel()
            raise
        else:
            future.set_result(answer)
            if keep(answer):
                self._keep(key, answer)
            return answer
        finally:
            del self._flying[key]
