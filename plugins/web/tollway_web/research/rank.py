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
        self._scores: dict[str, list[float]] = {}

    def _scored(self, question: str) -> list[float]:
        """BM25+ scores of every passage for `question`, computed once per question."""
        if question not in self._scores:
            query = terms(question)
            found = self._bm25.get_scores(query) if self._bm25 is not None and query else [0.0] * len(self.passages)
            self._scores[question] = list(found)
        return self._scores[question]

    def top(self, question: str, k: int, *, per_source: int = 1, exclude: set[int] | None = None) -> list[Passage]:
        """The `k` best passages sharing a word with the question, at most `per_source` from one source,
        skipping passage positions in `exclude` (already quoted under another question)."""
        if self._bm25 is None:
            return []
        query = terms(question)
        if not query:
            return []
        scores = self._scored(question)
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

    def best_of(self, source: int, questions: Sequence[str], exclude: set[int]) -> tuple[str, Passage] | None:
        """The question and the passage of `source` (not in `exclude`) that match best, the passage
        then added to `exclude`; a passage sharing no word with any question goes under the first
        question. None when the source has no passage left."""
        mine = [i for i, p in enumerate(self.passages) if p.source == source and i not in exclude]
        if not mine or not questions:
            return None
        best = (float("-inf"), questions[0], mine[0])
        for question in questions:
            wanted, scores = set(terms(question)), self._scored(question)
            for i in mine:
                if self._terms[i] & wanted and scores[i] > best[0]:
                    best = (scores[i], question, i)
        exclude.add(best[2])
        return best[1], self.passages[best[2]]
