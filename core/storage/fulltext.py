"""Words and query terms that mean the same on SQLite FTS5 and PostgreSQL tsvector.

Words are runs of letters and digits, lowercased, diacritics removed; anything else only
separates words, so no input reaches either engine as query syntax. A plugin normalises its
documents with `document` and its queries with `query_terms` before either engine sees them,
and writes each term with `fts5_term` / `tsquery_term` (a term is a plain word: nothing to
escape)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence, Set

import msgspec

_WORD = re.compile(r"[^\W_]+")
NO_STOP_WORDS: frozenset[str] = frozenset()


def words(text: str, stop_words: Set[str] = NO_STOP_WORDS) -> list[str]:
    """The words of `text` as an index sees them, `stop_words` dropped."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in decomposed if not unicodedata.category(c).startswith("M"))
    return [w for w in _WORD.findall(plain) if w not in stop_words]


def document(text: str | None, *, max_chars: int, stop_words: Set[str] = NO_STOP_WORDS) -> str:
    """The first `max_chars` of `text` as the plain words an index is given."""
    return " ".join(words((text or "")[:max_chars], stop_words))


def query_terms(q: str, *, max_terms: int, max_term_chars: int, stop_words: Set[str] = NO_STOP_WORDS) -> list[str]:
    """The distinct words of a query that take part in it, in order: at most `max_terms`,
    words longer than `max_term_chars` ignored (noise), and no more of `q` read than could
    hold them."""
    terms: list[str] = []
    for word in words(q[: max_terms * (max_term_chars + 1) * 4], stop_words):
        if len(word) <= max_term_chars and word not in terms:
            terms.append(word)
    return terms[:max_terms]


def fts5_term(term: str, prefix: bool, column: str = "") -> str:
    """One word as an FTS5 query: a quoted string, a prefix `*`, a column filter before it."""
    return f'{column + " : " if column else ""}"{term}"{"*" if prefix else ""}'


def tsquery_term(term: str, prefix: bool, label: str = "") -> str:
    """One word as a to_tsquery operand: `word`, `word:*`, `word:A`, `word:*A`."""
    return f"{term}{':' if prefix or label else ''}{'*' if prefix else ''}{label}"


def scored_query(
    terms: Sequence[str], parts: Sequence[tuple[str, str, int]], *, prefix_min: int, postgres: bool
) -> tuple[str, str]:
    """One query in the engine's syntax: (every term required, the per-part hits as JSON).

    `parts` are the document's weighted parts as (FTS5 column filter, tsvector label,
    points). The last term also matches as a prefix when it has `prefix_min` characters or
    more. The hits list each (points, term in that part) for a statement that sums the
    points of the hits a document matches: a rank counted, not estimated, so both engines
    give one order. On PostgreSQL the hits are `[{"points", "q"}]`, on SQLite `[[points, q]]`."""
    prefixes = [i == len(terms) - 1 and len(t) >= prefix_min for i, t in enumerate(terms)]
    hits: list[object]
    if postgres:
        everything = " & ".join(tsquery_term(t, p) for t, p in zip(terms, prefixes))
        hits = [
            {"points": points, "q": tsquery_term(t, p, label)}
            for t, p in zip(terms, prefixes)
            for _, label, points in parts
        ]
    else:
        # FTS5 joins phrases side by side with an implicit AND
        everything = " ".join(fts5_term(t, p) for t, p in zip(terms, prefixes))
        hits = [[points, fts5_term(t, p, column)] for t, p in zip(terms, prefixes) for column, _, points in parts]
    return everything, msgspec.json.encode(hits).decode()
