"""Planning: the sub-questions a topic is searched and reported under."""

from __future__ import annotations

import asyncio
import json
import re

from tollway import ToolError

from .budget import Deadline
from .model import Depth
from .ports import Writer
from .text import key_phrases

QUERY_COUNT: dict[str, int] = {"quick": 4, "deep": 8}
MAX_QUERY_CHARS = 500  # what a web search accepts
ANGLES = {
    "quick": ("overview", "evidence", "criticism"),
    "deep": ("overview", "evidence", "criticism", "history", "latest research", "statistics", "risks and limitations"),
}
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def clip(query: str) -> str:
    return " ".join(query.split())[:MAX_QUERY_CHARS].strip()


def _unique(queries: list[str], limit: int) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for query in queries:
        query = clip(query)
        if query and query.lower() not in seen:
            seen.add(query.lower())
            kept.append(query)
    return kept[:limit]


def deterministic_queries(topic: str, depth: Depth) -> list[str]:
    """The topic, the topic from a few angles, then its key phrases (deep only)."""
    topic = clip(topic)
    queries = [topic, *(f"{topic} {angle}" for angle in ANGLES[depth])]
    if depth == "deep":
        queries += key_phrases(topic)
    return _unique(queries, QUERY_COUNT[depth])


def parse_sub_questions(answer: str, limit: int) -> list[str] | None:
    """A JSON array of non-empty strings (a code fence around it allowed), else None."""
    try:
        value = json.loads(_FENCE.sub("", answer.strip()))
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        return None
    return _unique(value, limit) or None


def planning_messages(topic: str, count: int) -> list[dict[str, str]]:
    return [
        {
            "role": "system",
            "content": (
                "You plan web research. Answer with a JSON array of at most "
                f"{count} short web search queries (strings), each covering a different sub-question "
                "of the topic. No other text."
            ),
        },
        {"role": "user", "content": f"Topic: {topic}"},
    ]


async def plan_queries(topic: str, depth: Depth, writer: Writer | None, deadline: Deadline | None = None) -> list[str]:
    """Sub-questions from the writer when there is one and it answers well (before `deadline`),
    else deterministic.

    The topic itself always comes first, so the main question is always searched.
    """
    fallback = deterministic_queries(topic, depth)
    if writer is None:
        return fallback
    count = QUERY_COUNT[depth]
    try:
        async with asyncio.timeout(deadline.left() if deadline is not None else None):
            answer = await writer.complete(planning_messages(topic, count - 1))
    except (ToolError, TimeoutError):
        return fallback
    asked = parse_sub_questions(answer, count)
    if asked is None:
        return fallback
    return _unique([topic, *asked], count)
