"""Words, stop words and key phrases: the small text helpers planning and ranking share."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "vs",
        "versus",
    ]
)


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits, inner apostrophes and hyphens kept)."""
    return [w.lower() for w in _WORD.findall(text)]


def terms(text: str) -> list[str]:
    """The words that carry meaning: `words` without stop words."""
    return [w for w in words(text) if w not in STOP_WORDS]


def key_phrases(topic: str) -> list[str]:
    """Runs of meaningful words between stop words ("effects of X on Y" -> "X", "Y"),
    longest first, the whole topic itself left out."""
    phrases: list[str] = []
    run: list[str] = []
    for word in [*_WORD.findall(topic), ""]:
        if word and word.lower() not in STOP_WORDS:
            run.append(word)
            continue
        if run:
            phrase = " ".join(run)
            if phrase.lower() != topic.strip().lower() and (len(run) > 1 or len(run[0]) > 3):
                if phrase.lower() not in (p.lower() for p in phrases):
                    phrases.append(phrase)
            run = []
    return sorted(phrases, key=lambda p: -len(p.split()))
