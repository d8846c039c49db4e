"""Splitting a page's Markdown into passages, and cleaning them for quoting."""

from __future__ import annotations

import re

from .model import Page, Passage

TARGET_WORDS = 70  # short paragraphs are joined up to about this many words
MAX_WORDS = 150  # a longer paragraph is cut at sentence ends
MIN_WORDS = 12  # shorter leftovers (a heading, a caption) are not passages
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")  # Markdown backslash escapes
_HEADING = re.compile(r"^\s*#{1,6}\s")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_BRACKET_NUMBER = re.compile(r"\[(\d[\d,\s]*)\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|>\s*|\d+[.)]\s+)")


def clean(text: str) -> str:
    """One line of plain text: links reduced to their words, and any bracketed number the page
    carried (its own footnotes) made parenthetical, so only our citations look like `[n]`."""
    text = _LINK.sub(r"\1", _ESCAPE.sub(r"\1", text))
    text = _BRACKET_NUMBER.sub(r"(\1)", text)
    lines = [_MARKUP.sub("", line) for line in text.splitlines()]
    return " ".join(" ".join(lines).split())


def _pieces(paragraph: str) -> list[str]:
    if len(paragraph.split()) <= MAX_WORDS:
        return [paragraph]
    pieces: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(paragraph):
        if current and len(" ".join(current + [sentence]).split()) > MAX_WORDS:
            pieces.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        pieces.append(" ".join(current))
    return pieces


def split(page: Page, source: int) -> list[Passage]:
    passages: list[Passage] = []
    buffer: list[str] = []

    def flush() -> None:
        text = " ".join(buffer)
        if len(text.split()) >= MIN_WORDS:
            passages.append(Passage(source=source, text=text))
        buffer.clear()

    for block in re.split(r"\n\s*\n", page.markdown):
        # Headings are left out: a title is not a statement worth quoting.
        paragraph = clean("\n".join(line for line in block.splitlines() if not _HEADING.match(line)))
        if not paragraph:
            continue
        for piece in _pieces(paragraph):
            buffer.append(piece)
            if len(" ".join(buffer).split()) >= TARGET_WORDS:
                flush()
    flush()
    return passages
