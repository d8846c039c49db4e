"""Synthesis with the `llm` provider: the model writes the role, employer, location and a
short summary from the candidate's numbered sources (only the sentences naming the person,
sensitive ones already dropped), citing them by number. What it answers is checked, not
trusted: a field citing no source it was given is dropped, a value or summary sentence
touching a sensitive category is dropped, and a failed or malformed answer leaves the
profile extractive."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tollway import ToolError

from . import sensitive
from .candidates import Group, confidence
from .extract import sentences
from .wire import Cited

log = logging.getLogger(__name__)
FIELDS = {"role": 120, "employer": 120, "location": 120, "summary": 700}  # and the longest value of each
SYSTEM = (
    "You write a short public work profile of one person from numbered sources. Use only what the sources say. "
    "Never mention health, religion, political opinions, sexual orientation, ethnicity, criminal records or a home "
    "address, even when a source does. Answer with one JSON object and nothing else: "
    '{"role": {"value": "...", "sources": [1]}, "employer": {"value": "...", "sources": [1]}, '
    '"location": {"value": "city, region", "sources": [2]}, "summary": {"value": "two or three sentences", '
    '"sources": [1, 2]}}. Leave out a field the sources do not state; cite every field.'
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class Writer(Protocol):
    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str: ...


def prompt(name: str, g: Group) -> tuple[list[dict[str, str]], list[str]]:
    """The messages, and the URL of each source number (1-based)."""
    urls: list[str] = []
    blocks: list[str] = []
    for m in g.mentions:
        if m.sentences:
            urls.append(m.url)
            blocks.append(f"[{len(urls)}] {m.url}\n{m.title or ''}\n" + "\n".join(m.sentences))
    if g.record is not None:
        r = g.record
        urls.append(r.source)
        facts = [f"{k}: {v}" for k, v in (("title", r.role), ("employer", r.employer), ("location", r.location)) if v]
        blocks.append(f"[{len(urls)}] {r.source} (a people-data provider's record)\n" + "\n".join(facts))
    user = f"Person: {name}\n\nSources:\n\n" + "\n\n".join(blocks)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}], urls


def _decode(text: str) -> dict[str, Any] | None:
    text = _FENCE.sub("", text.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        found = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


async def write(writer: Writer, name: str, g: Group, match: float) -> tuple[dict[str, Cited], int] | None:
    """The fields the model wrote and checked, and how many values or sentences were
    withheld as sensitive; None when the model failed or answered something unusable."""
    messages, urls = prompt(name, g)
    if not urls:
        return None
    try:
        answer = _decode(await writer.complete(messages))
    except ToolError as exc:
        log.info("people research: the language model failed (%s); the profile stays extractive", exc.code)
        return None
    if answer is None:
        return None
    out: dict[str, Cited] = {}
    withheld = 0
    for field, longest in FIELDS.items():
        item = answer.get(field)
        if not isinstance(item, dict) or not isinstance(item.get("value"), str) or not item["value"].strip():
            continue
        cited = [urls[n - 1] for n in item.get("sources") or [] if isinstance(n, int) and 1 <= n <= len(urls)]
        if not cited:
            continue  # a value citing nothing it was given is not answered
        value = " ".join(item["value"].split())[:longest]
        if field == "summary":
            kept = [s for s in sentences(value) if not sensitive.touches(s)]
            withheld += len(sentences(value)) - len(kept)
            value = " ".join(kept)
        elif sensitive.touches(value):
            withheld += 1
            value = ""
        if value:
            sources = list(dict.fromkeys(cited))
            out[field] = Cited(value=value, sources=sources, confidence=confidence(len(sources), match))
    return out, withheld
