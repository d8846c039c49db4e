"""Ranking passages for a sub-question with BM25+, via rank-bm25.

BM25+ rather than plain Okapi: Okapi's term weight is zero for a word found in exactly
half the passages and negative above that, so on a few pages about one topic the topic's
own words would stop counting; BM25+ keeps every weight positive. A passage must share
at least one word with the question to be chosen at all."""
from __future__ import annotations

from collections.abc import Sequence

from rank_bm25 import BM25Plus

from .model import Passage
from .text import terms


class PassageIndex:
    """BM25 over every passage read; `top` answers one sub-question."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        self._terms = [set(terms(p.text)) for p in self.passages]
        corpus = [terms(p.text) or ["_"] for p in self.passages]
        self._bm25 = BM25Plus(corpus) if corpus else None

    def top(self, question: str, k: int, *, per_source: int = 1, exclude: set[int] | None = None) -> list[Passage]:
        """The `k` best passages sharing a word with the question, at most `per_source` from one source,
        skipping passage positions in `exclude` (already quoted under another question)."""
        if self._bm25 is None:
            return []
        query = terms(question)
        if not query:
            return []
        scores = self._bm25.get_scores(query)
        wanted = set(query)
        order = sorted((i for i in range(len(self.passages)) if self._terms[i] & wanted), key=lambda i: (-scores[i], i))
        chosen: list[Passage] = []
        used: dict[int, int] = {}
        for i in order:
            if len(chosen) >= k:
                break
            passage = self.passages[i]
            if (exclude and i in exclude) or used.get(passage.source, 0) >= per_source:
                continue
            used[passage.source] = used.get(passage.source, 0) + 1
            chosen.append(passage)
            if exclude is not None:
                exclude.add(i)
        return chosen
