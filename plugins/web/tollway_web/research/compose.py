"""Writing the report: extractive (quoted passages) or by a language model, checked."""

from __future__ import annotations

from collections.abc import Sequence

from tollway import ToolError

from . import citations
from .model import Passage, Source
from .passages import clean
from .ports import Writer
from .rank import PassageIndex

EXTRACTIVE_NOTE = (
    "_This report is extractive: no language model wrote it. Under each question it quotes, "
    "word for word, the passages of the sources read that rank highest for that question (BM25), "
    "each followed by the number of its source._"
)
MAX_PROMPT_PASSAGES = {"quick": 24, "deep": 72}  # room for one passage of every source
PER_QUESTION = {"quick": 3, "deep": 5}


def sources_section(sources: Sequence[Source]) -> str:
    lines = ["## Sources", ""]
    for source in sources:
        lines.append(
            f"{source.n}. {clean(source.title or source.url)} — <{source.url}> (retrieved {source.retrieved_at})"
        )
    return "\n".join(lines)


def select(index: PassageIndex, questions: Sequence[str], depth: str) -> dict[str, list[Passage]]:
    """The best passages per question, then the best passage of every source not yet quoted
    under the question it matches best, so every source read is cited; a passage is quoted
    under one question only."""
    used: set[int] = set()
    chosen = {q: index.top(q, PER_QUESTION[depth], per_source=1, exclude=used) for q in questions}
    quoted = {p.source for ps in chosen.values() for p in ps}
    for source in sorted({p.source for p in index.passages} - quoted):
        found = index.best_of(source, questions, used)
        if found is not None:
            chosen[found[0]].append(found[1])
    return chosen


def extractive(topic: str, chosen: dict[str, list[Passage]], sources: Sequence[Source]) -> str:
    parts = [f"# {clean(topic)}", "", EXTRACTIVE_NOTE, ""]
    for question, passages in chosen.items():
        parts += [f"## {clean(question)}", ""]
        if not passages:
            parts += ["No passage among the sources read answers this question.", ""]
        for passage in passages:
            parts += [f"> {passage.text} [{passage.source}]", ""]
    parts.append(sources_section(sources))
    return "\n".join(parts).rstrip() + "\n"


def writing_messages(
    topic: str, questions: Sequence[str], passages: Sequence[Passage], sources: Sequence[Source], min_cited: int = 1
) -> list[dict[str, str]]:
    urls = {s.n: s.url for s in sources}
    numbered = "\n\n".join(f"[{p.source}] ({urls[p.source]})\n{p.text}" for p in passages)
    system = (
        "You write research reports in Markdown from the numbered source passages you are given, and from "
        "nothing else. Support every factual statement with the number of its source in square brackets, "
        "like [2] or [1, 3], using only the numbers shown before the passages. Do not invent sources, do not "
        "add a list of sources at the end, and say so when the passages do not answer a question. "
        f"Cite at least {min_cited} different sources."
    )
    user = (
        f"Topic: {topic}\n\nQuestions to cover:\n"
        + "\n".join(f"- {q}" for q in questions)
        + f"\n\nPassages:\n\n{numbered}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prompt_passages(chosen: dict[str, list[Passage]], index: PassageIndex, depth: str) -> list[Passage]:
    """The chosen passages, then further passages from sources not yet represented, bounded."""
    limit = MAX_PROMPT_PASSAGES[depth]
    picked = [p for ps in chosen.values() for p in ps]
    seen_sources = {p.source for p in picked}
    for passage in index.passages:
        if passage.source not in seen_sources:
            picked.append(passage)
            seen_sources.add(passage.source)
    return picked[:limit]


async def written(
    writer: Writer,
    topic: str,
    questions: Sequence[str],
    passages: Sequence[Passage],
    sources: Sequence[Source],
    min_cited: int = 1,
) -> tuple[str | None, int]:
    """The model's report with its citations checked, or None when it failed or cited fewer
    than `min_cited` different sources read; and how many citations were removed."""
    try:
        answer = await writer.complete(writing_messages(topic, questions, passages, sources, min_cited))
    except ToolError:
        return None, 0
    text, removed, _ = citations.check(answer.strip(), {s.n for s in sources})
    if len(set(citations.cited(text))) < max(1, min_cited):
        return None, removed
    return f"{text.rstrip()}\n\n{sources_section(sources)}\n", removed
