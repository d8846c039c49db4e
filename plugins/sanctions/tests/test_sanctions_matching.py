"""Matching on the real 2021-07 SDN list and 2025-12 consolidated list: the
false-positive traps and true matches issue 5 names, and the score rules."""

from __future__ import annotations

import pytest

from tollway_sanctions import matching


def names(hits):
    return [h.entry.name for h in hits]


def test_true_matches(loaded_store) -> None:
    hits = loaded_store.search("Nicolas Maduro", person=True, min_score=0.85)
    assert hits[0].entry.number == 22790 and hits[0].entry.name == "MADURO MOROS, Nicolas"
    assert hits[0].score < 1
    hits = loaded_store.search("Ayman al Zawahiri", person=True, min_score=0.85)
    assert hits[0].entry.number == 2676 and hits[0].entry.name == "AL ZAWAHIRI, Dr. Ayman"
    assert hits[0].score == 1.0


def test_george_bush_is_not_george_habbash(loaded_store) -> None:
    hits = loaded_store.search("George Bush", person=True, min_score=0.85)
    assert "HABBASH, George" not in names(hits)
    assert hits == []
    # ...though Habbash himself is found
    assert loaded_store.search("George Habbash", person=True, min_score=0.85)[0].entry.number == 2680


@pytest.mark.parametrize("query", ["BELLETECH CORP", "BELLETECH CORP.", "Belletech Co., Ltd."])
def test_legal_suffix_does_not_carry_a_match(loaded_store, query) -> None:
    assert loaded_store.search(query, person=False, min_score=0.85) == []


@pytest.mark.parametrize("query", ["LTD", "CORP", "S.A.", "Co Ltd", "LLC", "The Company Ltd"])
def test_suffixes_alone_never_match(loaded_store, query) -> None:
    assert loaded_store.search(query, person=False, min_score=0.5) == []


def test_persons_and_companies_are_separate(loaded_store) -> None:
    assert loaded_store.search("Nicolas Maduro Moros", person=False, min_score=0.5) == []
    assert loaded_store.search("Aerocaribbean Airlines", person=True, min_score=0.5) == []
    (hit,) = [h for h in loaded_store.search("Aerocaribbean Airlines", person=False, min_score=0.85) if h.score == 1]
    assert hit.entry.number == 36


def test_aliases_are_searched_and_named(loaded_store) -> None:
    hits = loaded_store.search("A.I.C. Sogo Kenkyusho", person=False, min_score=0.85)
    assert hits[0].entry.number == 4691 and hits[0].entry.name == "AUM SHINRIKYO"
    assert hits[0].matched_name == "A.I.C. SOGO KENKYUSHO" and hits[0].score == 1.0


def test_word_order_accents_case_punctuation_do_not_matter(loaded_store) -> None:
    for q in ("nicolás MADURO-moros", "Moros; Maduro, NICOLAS", "MADURO MOROS Nicolas"):
        hit = loaded_store.search(q, person=True, min_score=0.85)[0]
        assert (hit.entry.number, hit.score) == (22790, 1.0)


def test_entry_fields(loaded_store) -> None:
    hit = loaded_store.search("Ayman al Zawahiri", person=True, min_score=0.85)[0]
    e = hit.entry
    assert e.programs == ["SDGT"] and e.title == "Operational and Military Leader of JIHAD GROUP"
    assert [(o.kind, o.name) for o in e.other_names][:2] == [
        ("aka", "AL-ZAWAHIRI, Ayman"),
        ("aka", "SALIM, Ahmad Fuad"),
    ]
    assert e.addresses == []  # OFAC's row for him is all -0-
    maduro = loaded_store.search("Nicolas Maduro Moros", person=True, min_score=0.85)[0].entry
    assert maduro.programs == ["VENEZUELA", "IRAN-CON-ARMS-EO"]
    assert [(a.street, a.city, a.country) for a in maduro.addresses] == [
        (None, "Caracas, Capital District", "Venezuela")
    ]


def test_remarks_overflow_is_joined(loaded_store) -> None:
    found = loaded_store.find(12300)
    assert found is not None
    spec, entry = found
    assert spec.key == "sdn"
    assert entry.remarks.endswith("Linked To: R D I S.A.")
    assert "S.A.S.; Linked To: RED MUNDIAL" in entry.remarks


def test_consolidated_list_is_searched(loaded_store) -> None:
    cons = loaded_store.lists["consolidated"]
    sample = next(p.entry for p in cons.entries.values() if not p.is_person)
    hits = loaded_store.search(sample.name, person=False, min_score=0.99)
    assert any(h.entry == sample and h.list_name == cons.spec.name for h in hits)


@pytest.mark.parametrize(
    ("query", "name", "person", "low", "high"),
    [
        ("Nicolas Maduro Moros", "MADURO MOROS, Nicolas", True, 1.0, 1.0),
        ("Nicolas Maduro", "MADURO MOROS, Nicolas", True, 0.85, 0.95),  # missing second surname
        ("Nicolas Madura Moros", "MADURO MOROS, Nicolas", True, 0.9, 0.99),  # spelling variant
        ("N Maduro Moros", "MADURO MOROS, Nicolas", True, 0.9, 0.99),  # initial
        ("Nicolas Maduro Moros Guerra", "MADURO MOROS, Nicolas", True, 0.75, 0.9),  # extra word
        ("George Bush", "HABBASH, George", True, 0.0, 0.6),
        ("Anglo Caribbean", "ANGLO-CARIBBEAN CO., LTD.", False, 0.9, 0.99),  # suffixes left out
    ],
)
def test_score_rules(query, name, person, low, high) -> None:
    assert low <= matching.score(query, name, person) <= high


def test_total_counts_all_and_best_first(loaded_store) -> None:
    hits = loaded_store.search("Mohammed", person=True, min_score=0.5)
    assert len(hits) > 25
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
