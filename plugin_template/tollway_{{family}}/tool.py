"""The `{{family}}_text_stats` tool: input and output types, checks, price and run.

Declared once here; the kernel derives the HTTP route, the MCP tool, the OpenAPI
entry, the price quote and the contract tests from this declaration.

It is the template's worked example and needs no network: replace it with your
family's real tool. A tool that calls an upstream declares the upstream's base
URL as a setting ending in `_URL` (e.g. `Setting("{{family}}", "api_url",
"https://api.example.org", ...)` read from `TOLLWAY_{{FAMILY}}_API_URL`), reads it
from `ctx.settings`, fetches with `ctx.http`, and raises `ToolError` when the
upstream fails, so the call is recorded failed and not charged.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Example, FieldError, Setting, Tool, ToolContext

READING_WORDS_PER_MINUTE = 230  # a common estimate for adult silent reading

# A word is a run of letters or digits, possibly joined by an apostrophe or hyphen
# ("don't", "well-known"). Every joiner must be followed by a letter or digit, so
# matching stays linear on any input.
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_SENTENCE_END = re.compile(r"[.!?]+")

STOP_WORDS_SETTING = Setting(
    family="{{family}}",
    name="stop_words",
    default="a,an,and,are,as,at,be,by,for,from,in,is,it,of,on,or,that,the,to,was,with",
    description="Comma-separated words left out of `top_words` (TOLLWAY_{{FAMILY}}_STOP_WORDS).",
)

# Struct class names become OpenAPI component names, which must be unique across
# every plugin: they carry the family's name.
Text = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=20_000,
        description="The text to measure: 1 to 20,000 characters with at least one word.",
        examples=["The quick brown fox jumps over the lazy dog."],
    ),
]
Top = Annotated[int, Meta(ge=1, le=20, description="How many of the most frequent words to return, 1 to 20 (default 5).")]


class {{Family}}TextStatsInput(msgspec.Struct, forbid_unknown_fields=True):
    text: Text
    top: Top = 5


class {{Family}}WordCount(msgspec.Struct):
    word: str  # lower-cased
    count: int


class {{Family}}TextStats(msgspec.Struct):
    characters: int
    words: int
    unique_words: int
    sentences: int
    reading_time_s: int  # at READING_WORDS_PER_MINUTE, rounded up
    top_words: list[{{Family}}WordCount]  # most frequent first, ties in alphabetical order; stop words left out


class {{Family}}Evidence(msgspec.Struct):
    source: str
    source_kind: str
    method: str


class {{Family}}TextStatsAnswer(msgspec.Struct):
    result: {{Family}}TextStats
    evidence: {{Family}}Evidence


def check(value: {{Family}}TextStatsInput) -> None:
    """What msgspec constraints cannot say: the text must hold at least one word."""
    if _WORD.search(value.text) is None:
        raise FieldError("text", "Expected at least one word (letters or digits)", code="invalid_input")


def stop_words_from(raw: str | None) -> frozenset[str]:
    return frozenset(w.strip().lower() for w in (raw or "").split(",") if w.strip())


def text_stats(text: str, top: int, stop_words: Iterable[str] = ()) -> {{Family}}TextStats:
    """The tool's whole computation: pure and deterministic, so it is easy to test."""
    words = [w.lower() for w in _WORD.findall(text)]
    skip = frozenset(stop_words)
    counts = Counter(w for w in words if w not in skip)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    sentences = sum(1 for part in _SENTENCE_END.split(text) if _WORD.search(part))
    return {{Family}}TextStats(
        characters=len(text),
        words=len(words),
        unique_words=len(set(words)),
        sentences=sentences,
        reading_time_s=math.ceil(len(words) * 60 / READING_WORDS_PER_MINUTE),
        top_words=[{{Family}}WordCount(word=w, count=c) for w, c in ranked],
    )


async def run(value: {{Family}}TextStatsInput, ctx: ToolContext) -> {{Family}}TextStatsAnswer:
    stop_words = stop_words_from(ctx.settings.get(STOP_WORDS_SETTING.name, STOP_WORDS_SETTING.default))
    return {{Family}}TextStatsAnswer(
        result=text_stats(value.text, value.top, stop_words),
        evidence={{Family}}Evidence(
            source="tollway-{{family}}",
            source_kind="computed",
            method=f"word and sentence counts; reading time at {READING_WORDS_PER_MINUTE} words per minute",
        ),
    )


TEXT_STATS = Tool(
    name="{{family}}_text_stats",
    path="/v1/tools/{{family}}/text-stats",
    title="{{Family}} text statistics",
    description=(
        "Counts the characters, words, distinct words and sentences of a text, estimates its reading time "
        f"at {READING_WORDS_PER_MINUTE} words per minute, and lists its most frequent words, leaving out common "
        "stop words. Words are runs of letters or digits, compared without case."
    ),
    category="data",
    subcategory="{{family}}_text_stats",
    input_type={{Family}}TextStatsInput,
    output_type={{Family}}TextStatsAnswer,
    run=run,
    price="0.001",  # USDC per call; a function of the validated input is allowed too
    family="{{family}}",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(
            title="Statistics of two short sentences",
            input={"text": "The quick brown fox jumps over the lazy dog. The dog sleeps.", "top": 3},
        ),
    ),
    check=check,
)
