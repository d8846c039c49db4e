"""More queries when the planned ones did not find enough readable pages: new sub-questions
from the writer, else the topic from further angles and its key phrases."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from tollway import ToolError

from .budget import Deadline
from .plan import ANGLES, clip, parse_sub_questions
from .ports import Writer
from .text import key_phrases

# Angles tried after the planned ones, most general first.
FURTHER_ANGLES = (
    "causes",
    "effects",
    "examples",
    "research findings",
    "analysis",
    "data",
    "case study",
    "review",
    "debate",
    "solutions",
    "explained",
    "news",
)
PER_ROUND: dict[str, int] = {"quick": 2, "deep": 4}  # new queries per further round


def fixed_reformulations(topic: str) -> Iterator[str]:
    """The topic from every angle, then its key phrases alone and from the first angles."""
    topic = clip(topic)
    angles = dict.fromkeys((*ANGLES["deep"], *FURTHER_ANGLES))
    yield from (f"{topic} {angle}" for angle in angles)
    phrases = key_phrases(topic)
    yield from phrases
    yield from (f"{phrase} {angle}" for phrase in phrases for angle in ANGLES["quick"])


def reformulation_messages(topic: str, asked: list[str], count: int) -> list[dict[str, str]]:
    return [
        {
            "role": "system",
            "content": (
                "You plan web research. The searches already made did not find enough sources. Answer with a "
                f"JSON array of at most {count} new short web search queries (strings) on the topic, each "
                "worded differently from the ones already made and covering another sub-question. No other text."
            ),
        },
        {"role": "user", "content": f"Topic: {topic}\n\nAlready searched:\n" + "\n".join(f"- {q}" for q in asked)},
    ]


class Reformulator:
    """Hands out queries not asked before, `PER_ROUND[depth]` at a time; asks the writer while
    it answers usefully, then falls back to the fixed reformulations for good."""

    def __init__(self, topic: str, depth: str, writer: Writer | None) -> None:
        self.topic = topic
        self.count = PER_ROUND[depth]
        self.writer = writer
        self._fixed = fixed_reformulations(topic)

    async def next(self, asked: list[str], deadline: Deadline) -> list[str]:
        seen = {q.lower() for q in asked}
        fresh: list[str] = []
        if self.writer is not None:
            fresh = [q for q in await self._asked_writer(asked, deadline) if q.lower() not in seen]
            if not fresh:
                self.writer = None  # it failed or only repeated itself: fixed ones from now on
        for query in self._fixed:
            if len(fresh) >= self.count:
                break
            if query and query.lower() not in seen and query.lower() not in {q.lower() for q in fresh}:
                fresh.append(query)
        return fresh[: self.count]

    async def _asked_writer(self, asked: list[str], deadline: Deadline) -> list[str]:
        if self.writer is None or deadline.passed:
            return []
        try:
            async with asyncio.timeout(deadline.left()):
                answer = await self.writer.complete(reformulation_messages(self.topic, asked, self.count))
        except (ToolError, TimeoutError):
            return []
        return parse_sub_questions(answer, self.count) or []
