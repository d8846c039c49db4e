"""Ranking passages for a sub-question with BM25 (Okapi), via rank-bm25."""
from __future__ import annotations

from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from .model import Passage
from .text import terms


class PassageIndex:
    """BM25 over every passage read; `top` answers one sub-question."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        corpus = [terms(p.text) or ["_"] for p in self.passages]
        self._bm25 = BM25Okapi(corpus) if corpus else None

    def top(self, question: str, k: int, *, per_source: int = 1, exclude: set[int] | None = None) -> list[Passage]:
        """The `k` best passages with a positive score, at most `per_source` from one source,
        skipping passage positions in `exclude` (already quoted under another question)."""
        if self._bm25 is None:
            return []
        query = terms(question)
        if not query:
            return []
        scores = self._bm25.get_scores(query)
        order = sorted(range(len(self.passages)), key=lambda i: (-scores[i], i))
        chosen: list[Passage] = []
        used: dict[int, int] = {}
        for i in order:
            if len(chosen) >= k or scores[i] <= 0:
                break
            passage = self.passages[i]
            if (exclude and i in exclude) or used.get(passage.source, 0) >= per_source:
                continue
            used[passage.source] = used.get(passage.source, 0) + 1
            chosen.append(passage)
            if exclude is not None:
                exclude.add(i)
        return chosen
