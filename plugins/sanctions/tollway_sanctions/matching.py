"""Name matching: normalization, a candidate index (token blocking) and the score.

docs/sanctions.md explains the formula. In short, names become multisets of
words (accents, case, punctuation and order removed); query words are paired
one-to-one with a name's words (exact 1, spelling variant = rapidfuzz's
normalized Levenshtein similarity when >= TOKEN_MIN, an initial 0.8); then

    score = sum(s * (wq + wn) over pairs)
            / (sum(wq over all query words) + sum(wn over paired name words)
               + LAMBDA * sum(wn over unpaired name words))

Strong words weigh 1; a company's legal suffixes and stop words (LTD, LLC, CORP,
CO, S.A., OF, THE, ...) weigh WEAK_WEIGHT and never pair with a strong word, so
they cannot carry a match on their own. The score is 1 exactly when both names
have the same words in any order.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from rapidfuzz.distance import Levenshtein

TOKEN_MIN = 0.7  # below this similarity two words are different words
FUZZY_MIN_LEN = 4  # shorter words only match exactly (one edit changes them too much)
INITIAL_SCORE = 0.8  # "N" for "Nicolas" (persons only)
WEAK_WEIGHT = 0.2
LAMBDA = 0.5  # an entry word the query left out (a middle name, a second surname) costs half

# Company words that say what kind of body it is, not which one (and stop words).
WEAK_WORDS = frozenset(
    [
        "ltd",
        "limited",
        "llc",
        "llp",
        "lp",
        "plc",
        "inc",
        "incorporated",
        "corp",
        "corporation",
        "co",
        "company",
        "cos",
        "sa",
        "sas",
        "sl",
        "srl",
        "spa",
        "sarl",
        "sal",
        "sae",
        "sab",
        "cv",
        "bv",
        "nv",
        "ag",
        "gmbh",
        "kg",
        "ohg",
        "mbh",
        "oy",
        "ab",
        "as",
        "asa",
        "aps",
        "pte",
        "pty",
        "pvt",
        "bhd",
        "sdn",
        "jsc",
        "ojsc",
        "pjsc",
        "cjsc",
        "oao",
        "ooo",
        "zao",
        "pao",
        "tov",
        "fze",
        "fzco",
        "fzc",
        "fzllc",
        "est",
        "group",
        "holding",
        "holdings",
        "intl",
        "international",
        "trading",
        "the",
        "of",
        "and",
        "for",
        "de",
        "del",
        "la",
        "le",
        "les",
        "des",
        "du",
        "da",
        "do",
        "dos",
        "das",
        "y",
        "e",
        "et",
        "und",
        "fur",
    ]
)
HONORIFICS = frozenset(["dr", "mr", "mrs", "ms", "miss", "mme", "prof"])  # dropped from person names

_SPLIT = re.compile(r"[^a-z0-9]+")
_GLUE = re.compile(r"['\u2019\u2018`.]")  # O'Brien -> obrien, S.A. -> sa, A.I.C. -> aic


def normalize(text: str) -> str:
    """Lower case ASCII letters and digits; accents gone; apostrophes and periods glued."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return _GLUE.sub("", stripped)


def tokens(text: str, person: bool) -> list[str]:
    words = [w for w in _SPLIT.split(normalize(text)) if w]
    if person:
        words = [w for w in words if w not in HONORIFICS]
    return words


def weight(word: str, person: bool) -> float:
    return WEAK_WEIGHT if (not person and word in WEAK_WORDS) else 1.0


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


@dataclass
class _Name:
    key: Hashable  # the entry this name belongs to
    text: str  # as the list writes it
    words: tuple[str, ...]
    weights: tuple[float, ...]


@dataclass
class NameIndex:
    """All names (primary and other names) of one kind: persons, or everything else."""

    person: bool
    names: list[_Name] = field(default_factory=list)
    postings: dict[str, list[int]] = field(default_factory=dict)  # strong word -> name ids
    deletes: dict[str, set[str]] = field(default_factory=dict)  # one-deletion variant -> strong words

    def add(self, key: Hashable, text: str) -> None:
        words = tuple(tokens(text, self.person))
        if not words:
            return
        nid = len(self.names)
        self.names.append(_Name(key, text, words, tuple(weight(w, self.person) for w in words)))
        for w in set(words):
            if weight(w, self.person) < 1 or (self.person and len(w) < 2):  # a person's initial is not a key
                continue
            posting = self.postings.get(w)
            if posting is None:
                self.postings[w] = [nid]
                if len(w) >= FUZZY_MIN_LEN:
                    for d in _deletes(w):
                        self.deletes.setdefault(d, set()).add(w)
            else:
                posting.append(nid)

    # -- query side ----------------------------------------------------------------
    def _variants(self, word: str) -> dict[str, float]:
        """Indexed words this query word may stand for, with their similarity."""
        out: dict[str, float] = {}
        if word in self.postings:
            out[word] = 1.0
        if len(word) >= FUZZY_MIN_LEN:
            near: set[str] = set(self.deletes.get(word, ()))  # indexed word is one longer
            for d in _deletes(word):
                if d in self.postings:  # indexed word is one shorter
                    near.add(d)
                near.update(self.deletes.get(d, ()))  # one substitution or transposition
            for cand in near:
                if cand != word and len(cand) >= FUZZY_MIN_LEN:
                    s = Levenshtein.normalized_similarity(word, cand)
                    if s >= TOKEN_MIN:
                        out[cand] = s
        return out

    def search(self, query: str, min_score: float) -> dict[Hashable, tuple[float, str]]:
        """Every entry key whose best name scores >= min_score -> (score, that name)."""
        qwords = tokens(query, self.person)
        qweights = [weight(w, self.person) for w in qwords]
        strong = [i for i, w in enumerate(qwords) if qweights[i] == 1.0]
        if not strong:
            return {}  # legal suffixes and stop words alone never match
        short_ok = not self.person  # in company names a single letter or digit is a word ("P-914", "ASIA BRIDGE 1")
        variants = [
            self._variants(w) if (qweights[i] == 1.0 and (len(w) >= 2 or short_ok)) else {}
            for i, w in enumerate(qwords)
        ]
        blocking = [i for i in strong if len(qwords[i]) >= 2 or short_ok]
        initials = [i for i in strong if len(qwords[i]) == 1] if self.person else []
        # A name reaches min_score only if its paired query weight M satisfies
        # 2M / (Wq + M) >= t, i.e. M >= t * Wq / (2 - t); weak words give at most
        # their weight, initials at most INITIAL_SCORE each.
        wq = sum(qweights)
        need = min_score * wq / (2 - min_score) - (wq - len(strong)) - INITIAL_SCORE * len(initials)
        k = max(1, math.ceil(need - 1e-9))
        if k > len(blocking):
            return {}
        # Pigeonhole: a name pairing k of the blocking words pairs at least one of
        # the (len - k + 1) rarest, so only their postings are read.
        sizes = sorted(blocking, key=lambda i: sum(len(self.postings[v]) for v in variants[i]))
        candidates: set[int] = set()
        for i in sizes[: len(blocking) - k + 1]:
            for v in variants[i]:
                candidates.update(self.postings[v])
        best: dict[Hashable, tuple[float, str]] = {}
        for nid in candidates:
            name = self.names[nid]
            s = self._score(qwords, qweights, variants, name)
            if s >= min_score - 1e-9:
                prev = best.get(name.key)
                if prev is None or s > prev[0] or (s == prev[0] and name.text < prev[1]):
                    best[name.key] = (s, name.text)
        return best

    def _score(self, qwords: list[str], qweights: list[float], variants: list[dict[str, float]], name: _Name) -> float:
        pairs: list[tuple[float, int, int]] = []
        for i, q in enumerate(qwords):
            var = variants[i]
            for j, n in enumerate(name.words):
                if qweights[i] != name.weights[j]:
                    continue  # weak words pair only with weak words
                if q == n:
                    s = 1.0
                elif self.person and (len(q) == 1 or len(n) == 1) and q[0] == n[0]:
                    s = INITIAL_SCORE
                else:
                    s = var.get(n, 0.0)
                if s > 0:
                    pairs.append((s, i, j))
        pairs.sort(reverse=True)
        used_q: set[int] = set()
        used_n: set[int] = set()
        num = 0.0
        for s, i, j in pairs:
            if i in used_q or j in used_n:
                continue
            used_q.add(i)
            used_n.add(j)
            num += s * (qweights[i] + name.weights[j])
        den = sum(qweights)
        for j, w in enumerate(name.weights):
            den += w if j in used_n else LAMBDA * w
        return num / den if den else 0.0


def score(query: str, name: str, person: bool) -> float:
    """The score of one query against one name (for docs and tests)."""
    index = NameIndex(person)
    index.add(0, name)
    found = index.search(query, 0.0 + 1e-12)
    return found[0][0] if found else 0.0


def build(items: Iterable[tuple[Hashable, bool, list[str]]]) -> tuple[NameIndex, NameIndex]:
    """(key, is_person, [names]) -> (persons index, others index)."""
    persons, others = NameIndex(True), NameIndex(False)
    for key, is_person, names in items:
        idx = persons if is_person else others
        for n in names:
            idx.add(key, n)
    return persons, others
