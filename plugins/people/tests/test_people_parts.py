"""The parts of people research that need no service: the sensitive-category filter, the
normal forms identifiers are compared in, reading a page, and scoring candidates."""

from __future__ import annotations

import re

import pytest
from people_standins import PAGES, SENSITIVE

from tollway_people import candidates, extract, sensitive
from tollway_people.match import companies_agree, company_form, domain_form, name_form, opt_out_keys


def text(path: str) -> str:
    """A stand-in page's text, one paragraph a line (what web read's extraction gives, near enough)."""
    return re.sub(r"<[^>]+>", "\n", PAGES[path])


@pytest.mark.parametrize(("category", "sentence"), sorted(SENSITIVE.items()))
def test_each_sensitive_category_is_recognised(category, sentence):
    assert sensitive.category(sentence) == category


@pytest.mark.parametrize(
    "sentence",
    [
        "Dana Reyes is the head of finance at Example Corp.",
        "She is based in Austin, Texas, and previously worked in audit for eight years.",
        "Grace Lee leads the data platform team.",  # "race" inside a word is no ethnicity
        "He joined in 2019 as a staff engineer.",
    ],
)
def test_work_facts_pass(sentence):
    assert sensitive.category(sentence) is None


def test_normal_forms():
    assert name_form("  José  O'Neil-Smith ") == "jose o neil smith"
    assert company_form("Acme Robotics, Inc.") == company_form("ACME robotics") == "acme robotics"
    assert domain_form("https://www.Example.com/team") == "example.com"
    assert companies_agree("example.com", "Example Corp") and not companies_agree("Example Corp", "Acme")
    keys = opt_out_keys(
        name="Alex Kim", companies=["Acme, LLC"], emails=["A@Mail.X.example"], domains=["mail.x.example"]
    )
    assert keys == [
        "email:a@mail.x.example",
        "domain:mail.x.example",
        "domain:x.example",
        "name_company:alex kim|acme",
    ]


def test_a_page_is_read_for_the_person_it_names_and_nothing_sensitive():
    found = extract.mention(
        "dana reyes", "http://pages/dana", "Dana Reyes - Head of Finance - Example Corp", text("/team/dana-reyes")
    )
    assert found is not None and found.about
    assert (found.role, found.employer, found.location) == ("Head of Finance", "Example Corp", "Austin, Texas")
    assert found.withheld == len(SENSITIVE)
    assert not any(sensitive.touches(s) for s in found.sentences)
    assert extract.mention("Dana Reyes", "http://pages/x", "Gardening", text("/blog/unrelated")) is None


def test_candidates_are_scored_against_the_hints():
    acme = extract.mention("Alex Kim", "http://a/1", None, text("/people/alex-kim-acme"))
    school = extract.mention("Alex Kim", "http://b/2", None, text("/staff/alex-kim"))
    groups = candidates.group([acme, school], None)
    assert len(groups) == 2
    by_place = [candidates.score(g, {"location": "Portland, OR"}) for g in groups]
    assert by_place == [(1.0, ["location"]), (1.0, ["location"])]
    by_company = [candidates.score(g, {"company": "Acme Robotics Inc", "location": "Portland"}) for g in groups]
    assert by_company == [(1.0, ["company", "location"]), (0.5, ["location"])]
    assert candidates.score(groups[0], {"email": "alex@gmail.com"}) == (0.5, [])
    assert candidates.score(groups[0], {"url": "https://b/elsewhere"}) == (0.0, [])
    assert candidates.score(groups[1], {"url": "http://b/elsewhere"}) == (0.5, [])
    assert candidates.score(groups[1], {"url": "http://B/2#top"}) == (1.0, ["url"])
    assert candidates.confidence(2, 1.0) == 0.85 and candidates.confidence(1, 0.5) == 0.49
